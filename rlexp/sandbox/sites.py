"""StackExchange-like sites of the three LaMP-QA / Personalized RewardBench domains.

The site names are the real ones (reference/personalized-rewardbench.md §1). For each site the
sandbox keeps a few question topics and two (technical term, plain paraphrase) pairs; the terms
feed the jargon checker, the paraphrases the plain-language renderer.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlexp.data.schemas import PRB_DOMAINS


@dataclass(frozen=True)
class Site:
    """One StackExchange site: its display subject, question topics and jargon pairs."""

    name: str
    domain: str
    subject: str
    topics: tuple[str, ...]
    jargon: tuple[tuple[str, str], ...]  # (technical term, plain paraphrase)


_ART, _LIFE, _SOC = PRB_DOMAINS

# name: (subject, topics separated by "|", "term=plain;term=plain")
_RAW: dict[str, tuple[str, str, str, str]] = {
    # Art_and_Entertainment
    "anime": (
        _ART,
        "Anime",
        "following a long anime series|drawing anime characters|watching anime with subtitles|collecting anime figures|telling anime studios apart",
        "sakuga=especially fluid animation;seiyuu=the voice actors",
    ),
    "boardgames": (
        _ART,
        "Board Games",
        "teaching board games to new players|hosting a weekly game night|learning a heavy strategy game|storing a growing game collection|choosing cooperative games",
        "worker placement=sending pieces out to take actions;deck building=growing your own pile of cards",
    ),
    "gaming": (
        _ART,
        "Video Gaming",
        "improving at competitive shooters|finishing long role-playing games|streaming my gameplay|speedrunning an old platformer|building a budget gaming setup",
        "frame data=how quickly each move starts;input latency=the delay between pressing and seeing",
    ),
    "literature": (
        _ART,
        "Literature",
        "reading classic novels|keeping a reading journal|joining a book club|reading poetry closely|tackling long Russian novels",
        "free indirect discourse=narration that slips into a character's thoughts;unreliable narrator=a storyteller you cannot fully trust",
    ),
    "movies": (
        _ART,
        "Film",
        "watching older films|noticing film editing|keeping a film diary|exploring world cinema|watching a director's whole career",
        "mise-en-scene=how everything in the frame is arranged;diegetic sound=sound the characters can hear",
    ),
    "music": (
        _ART,
        "Music Practice",
        "learning guitar chords|practising piano scales|reading sheet music|singing in tune|writing simple songs",
        "voice leading=how each note moves to the next;syncopation=accents off the main beat",
    ),
    "musicfans": (
        _ART,
        "Music Listening",
        "discovering new bands|collecting vinyl records|going to live concerts|exploring jazz albums|making good playlists",
        "discography=the full list of albums;remastering=polishing an old recording again",
    ),
    "rpg": (
        _ART,
        "Tabletop Roleplaying",
        "running my first campaign|building a memorable character|keeping players engaged|preparing sessions quickly|handling combat encounters",
        "action economy=how much each side can do per turn;session zero=a first meeting to agree on expectations",
    ),
    "scifi": (
        _ART,
        "Science Fiction",
        "reading classic science fiction|getting into space opera|following a long sci-fi franchise|finding realistic science fiction|writing sci-fi short stories",
        "worldbuilding=inventing the setting;hard sf=stories that respect real physics",
    ),
    "sound": (
        _ART,
        "Sound Design",
        "recording clean dialogue|mixing a podcast|setting up a home studio|recording field sounds|reducing room echo",
        "gain staging=setting levels at each step;room treatment=softening the echo in the room",
    ),
    # Lifestyle_and_Personal_Development
    "bicycles": (
        _LIFE,
        "Cycling",
        "commuting by bike|looking after a bike chain|riding longer distances|choosing a first road bike|cycling in the rain",
        "cadence=how fast you turn the pedals;drivetrain wear=how worn the chain and gears are",
    ),
    "cooking": (
        _LIFE,
        "Home Cooking",
        "baking sourdough bread|sharpening kitchen knives|cooking rice on the stove|planning weekly meals|making pan sauces",
        "mise en place=getting everything ready first;maillard browning=letting food brown properly",
    ),
    "diy": (
        _LIFE,
        "Home Repair",
        "patching drywall|fixing a leaky tap|painting a room|hanging heavy shelves|sealing drafty windows",
        "load-bearing wall=a wall that holds up the house;pilot hole=a small starter hole",
    ),
    "fitness": (
        _LIFE,
        "Fitness",
        "starting strength training|running a first 5k|stretching after workouts|training at home|building a workout routine",
        "progressive overload=adding a little more effort over time;hypertrophy=muscle growth",
    ),
    "freelancing": (
        _LIFE,
        "Freelancing",
        "finding first clients|setting freelance rates|writing project proposals|managing irregular income|handling late payments",
        "retainer agreement=a regular monthly arrangement;scope creep=a project slowly growing beyond the plan",
    ),
    "gardening": (
        _LIFE,
        "Gardening",
        "growing tomatoes|starting a vegetable bed|caring for houseplants|composting kitchen scraps|pruning fruit trees",
        "soil amendment=something added to improve the soil;hardening off=slowly getting seedlings used to outside",
    ),
    "health": (
        _LIFE,
        "Health",
        "sleeping better|drinking enough water|reducing screen time|managing stress|eating more vegetables",
        "circadian rhythm=your body clock;sleep hygiene=good habits around bedtime",
    ),
    "lifehacks": (
        _LIFE,
        "Everyday Life Hacks",
        "organising a small closet|keeping a tidy desk|saving time in the morning|decluttering the kitchen|remembering daily tasks",
        "task batching=doing similar tasks together;habit stacking=tying a new habit to an old one",
    ),
    "martialarts": (
        _LIFE,
        "Martial Arts",
        "learning basic judo throws|improving karate forms|sparring with a partner|building flexibility for kicks|choosing a martial art",
        "kuzushi=breaking the partner's balance;ukemi=falling without getting hurt",
    ),
    "outdoors": (
        _LIFE,
        "the Outdoors",
        "planning a first overnight hike|packing a light backpack|reading a trail map|camping in cold weather|choosing hiking boots",
        "base weight=the pack weight without food and water;layering system=wearing several thin layers",
    ),
    "parenting": (
        _LIFE,
        "Parenting",
        "setting a toddler bedtime|limiting screen time for kids|handling sibling arguments|encouraging kids to read|packing school lunches",
        "positive reinforcement=praising the behaviour you want;co-regulation=staying calm together with the child",
    ),
    "pets": (
        _LIFE,
        "Pet Care",
        "house-training a puppy|introducing a new cat|trimming a dog's nails|feeding an older dog|keeping a rabbit indoors",
        "desensitisation=getting the animal used to it slowly;enrichment toys=toys and games that keep a pet busy",
    ),
    "sports": (
        _LIFE,
        "Sports",
        "improving a tennis serve|shooting better in basketball|getting ready for a football season|joining a local running club|learning to swim laps",
        "periodisation=planning training in phases;follow-through=finishing the motion fully",
    ),
    "sustainability": (
        _LIFE,
        "Sustainable Living",
        "reducing food waste|cutting household plastic|saving energy at home|buying second-hand clothes|starting a home compost",
        "life-cycle assessment=counting the impact from making to throwing away;embodied carbon=the emissions from making a product",
    ),
    "travel": (
        _LIFE,
        "Travel",
        "packing carry-on only|planning a first trip abroad|travelling by train|finding cheap flights|beating jet lag",
        "open-jaw ticket=flying into one city and out of another;layover=a stop between flights",
    ),
    "woodworking": (
        _LIFE,
        "Woodworking",
        "building a simple bookshelf|sharpening chisels|finishing wood with oil|cutting straight with a hand saw|choosing wood for a first project",
        "grain direction=which way the wood fibres run;dovetail joint=interlocking corner cuts",
    ),
    "workplace": (
        _LIFE,
        "the Workplace",
        "asking for a raise|running better meetings|giving feedback to a colleague|managing a heavy workload|preparing for a performance review",
        "stakeholder alignment=getting everyone to agree;deliverables=the things you hand over",
    ),
    "writers": (
        _LIFE,
        "Writing",
        "finishing a first novel draft|writing dialogue|building a daily writing habit|editing my own work|outlining a plot",
        "narrative arc=how the story rises and resolves;beat sheet=a list of key story moments",
    ),
    # Society_and_Culture
    "academia": (
        _SOC,
        "Academic Life",
        "writing a literature review|choosing a PhD advisor|presenting at a conference|managing a thesis timeline|reading research papers efficiently",
        "peer review=other researchers checking the work;citation manager=a tool that keeps track of references",
    ),
    "buddhism": (
        _SOC,
        "Buddhism",
        "starting a meditation practice|reading the early sutras|visiting a local temple|understanding mindfulness teachings|keeping a daily chanting practice",
        "vipassana=insight meditation;dukkha=the unsatisfactoriness of life",
    ),
    "christianity": (
        _SOC,
        "Christianity",
        "reading the Gospels|learning church history|choosing a study Bible|joining a Bible study group|following the liturgical year",
        "exegesis=careful explanation of a text;catechism=a summary of teachings",
    ),
    "english": (
        _SOC,
        "English Usage",
        "using commas correctly|choosing between British and American spelling|improving my vocabulary|writing clear emails|learning phrasal verbs",
        "subjunctive mood=the form used for wishes;dangling modifier=a phrase attached to the wrong word",
    ),
    "expatriates": (
        _SOC,
        "Living Abroad",
        "moving to a new country|opening a bank account abroad|learning the local language|finding housing as a newcomer|making friends abroad",
        "tax residency=which country taxes you;apostille=an official stamp that makes documents valid abroad",
    ),
    "genealogy": (
        _SOC,
        "Family History",
        "tracing my family tree|reading old parish records|organising family photos|using census records|interviewing older relatives",
        "primary source=a record made at the time;pedigree chart=a diagram of direct ancestors",
    ),
    "hermeneutics": (
        _SOC,
        "Hermeneutics",
        "reading a parable in context|comparing Bible translations|understanding ancient idioms|studying a single book closely|reading prophecy carefully",
        "historical-grammatical method=reading a text in its original time and language;pericope=a short self-contained passage",
    ),
    "hinduism": (
        _SOC,
        "Hinduism",
        "reading the Bhagavad Gita|learning basic Sanskrit|understanding the major festivals|starting a daily puja|learning about the epics",
        "dharma=one's duty;bhakti=loving devotion",
    ),
    "history": (
        _SOC,
        "History",
        "studying the Roman Empire|reading old documents|visiting historical sites|understanding the causes of a war|keeping track of historical dates",
        "historiography=how history has been written;counterfactual=what-if reasoning",
    ),
    "interpersonal": (
        _SOC,
        "Interpersonal Skills",
        "setting boundaries with friends|handling a difficult conversation|apologising well|making small talk|resolving conflicts with roommates",
        "active listening=really listening and reflecting back;nonviolent communication=a calm way of stating needs",
    ),
    "islam": (
        _SOC,
        "Islam",
        "learning Quranic Arabic|preparing for Ramadan fasting|understanding the five pillars|reading Quran commentary|keeping regular prayer times",
        "tajweed=rules for reciting clearly;fiqh=the study of practical rules",
    ),
    "judaism": (
        _SOC,
        "Judaism",
        "learning Hebrew for prayer|preparing a Shabbat meal|studying the weekly Torah portion|understanding the holidays|keeping a kosher kitchen",
        "halakha=Jewish law;midrash=traditional stories that explain the text",
    ),
    "law": (
        _SOC,
        "Law",
        "reading a rental contract|understanding small claims court|writing a simple will|handling a parking fine|knowing tenant rights",
        "jurisdiction=which court can decide;statute of limitations=the deadline to bring a claim",
    ),
    "linguistics": (
        _SOC,
        "Linguistics",
        "learning the phonetic alphabet|understanding language families|studying sentence structure|learning about sound change|comparing dialects",
        "morphology=how words are built;phoneme=a basic speech sound",
    ),
    "money": (
        _SOC,
        "Personal Finance",
        "building an emergency fund|paying off credit card debt|starting to invest|making a monthly budget|saving for retirement",
        "compound interest=interest that grows on itself;asset allocation=how you split your money",
    ),
    "philosophy": (
        _SOC,
        "Philosophy",
        "reading Plato's dialogues|understanding ethics basics|reading Kant|writing a philosophy essay|learning formal logic",
        "epistemology=the study of knowledge;categorical imperative=Kant's rule about acting on principles",
    ),
    "politics": (
        _SOC,
        "Politics",
        "following local elections|understanding how a bill becomes law|reading political news critically|contacting my representative|comparing party platforms",
        "gerrymandering=drawing districts to favour a party;filibuster=delaying a vote by talking",
    ),
    "skeptics": (
        _SOC,
        "Scientific Skepticism",
        "checking viral claims|reading health studies critically|spotting misleading graphs|evaluating news sources|understanding statistics in the news",
        "confirmation bias=seeing what we expect;sample size=how many people were studied",
    ),
    "vegetarianism": (
        _SOC,
        "Vegetarian Living",
        "getting enough protein without meat|cooking with lentils|eating out as a vegetarian|switching to a plant-based diet|planning vegetarian meals for a family",
        "complete protein=protein with all the building blocks;b12 supplementation=taking a vitamin pill",
    ),
}


def _build() -> dict[str, Site]:
    sites: dict[str, Site] = {}
    for name, (domain, subject, topics, jargon) in _RAW.items():
        pairs = tuple(tuple(p.split("=", 1)) for p in jargon.split(";"))
        sites[name] = Site(name, domain, subject, tuple(topics.split("|")), pairs)  # type: ignore[arg-type]
    return sites


SITES: dict[str, Site] = _build()
SITES_BY_DOMAIN: dict[str, tuple[str, ...]] = {
    d: tuple(n for n, s in SITES.items() if s.domain == d) for d in PRB_DOMAINS
}
JARGON_TERMS: tuple[str, ...] = tuple(sorted({t for s in SITES.values() for t, _ in s.jargon})) + (
    "heuristic",
    "paradigm",
    "methodology",
    "parameterisation",
    "optimisation",
    "optimization",
)
