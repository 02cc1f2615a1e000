"""A small fictional knowledge base: towns, inventors and creatures with typed attributes.

Names are made up from syllables (seeded), so no pretrained model knows them; the facts reach a
tiny model only through the sandbox's pretraining corpus. Each entity belongs to one *split*
(``train``, ``rb2``, ``ds_train``, ``ds_eval``) so that training prompts never mention a benchmark
or downstream entity. Value vocabularies are word-disjoint across attributes, so a judge can tell
which attribute a mentioned value belongs to.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from rlexp.sandbox.rng import make_rng

SPLITS: tuple[str, ...] = ("train", "rb2", "ds_train", "ds_eval")
_SPLIT_WEIGHTS = (0.4, 0.3, 0.15, 0.15)

REGIONS = ("Norvale", "Dunmere", "Caldria", "Westmarch", "Orrin Coast", "Tallowfen", "Brisk Hollow", "Saffra Plains")
RIVERS = ("Sell", "Amberflow", "Kest", "Moravin", "Lune", "Tarrow", "Vey", "Quillan")
EXPORTS = ("salt", "wool", "glass", "copper", "timber", "cheese", "silk", "amber", "pottery", "tea", "iron", "paper")
INVENTIONS = (
    "tide clock",
    "lantern press",
    "wind loom",
    "brass compass",
    "rain gauge",
    "folding kiln",
    "spring lock",
    "mirror telescope",
    "steam bellows",
    "signal drum",
    "water organ",
    "sun ring",
)
TRADES = (
    "clockmaker",
    "glassblower",
    "astronomer",
    "cartographer",
    "weaver",
    "shipwright",
    "apothecary",
    "stonemason",
    "printer",
    "brewer",
)
COLOURS = ("crimson", "teal", "ochre", "violet", "silver", "olive", "scarlet", "indigo", "ivory", "saffron")
HABITATS = ("marsh", "pine forest", "dry lake bed", "cave", "meadow", "sea cliff", "reef", "tundra")
DIETS = ("beetles", "seeds", "moss", "small fish", "berries", "worms", "nectar", "lichen")

# kind -> attribute -> value domain ("year" is numeric).
ATTRIBUTES: dict[str, dict[str, tuple[str, ...] | str]] = {
    "town": {"region": REGIONS, "founded": "year", "export": EXPORTS, "river": RIVERS},
    "inventor": {"invention": INVENTIONS, "trade": TRADES, "born": "year", "hometown": "town"},
    "creature": {"colour": COLOURS, "habitat": HABITATS, "diet": DIETS},
}
# Human-readable attribute nouns (used by prompts and off-topic answers).
ATTRIBUTE_NOUNS = {
    "region": "region",
    "founded": "founding year",
    "export": "main export",
    "river": "river",
    "invention": "invention",
    "trade": "trade",
    "born": "birth year",
    "hometown": "hometown",
    "colour": "colour",
    "habitat": "habitat",
    "diet": "diet",
}

_ONSETS = (
    "b",
    "c",
    "d",
    "f",
    "g",
    "h",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "w",
    "z",
    "br",
    "dr",
    "gr",
    "kl",
    "tr",
    "th",
    "st",
)
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ia", "ou")
_CODAS = ("", "n", "r", "l", "s", "th", "nd", "rk", "m")
_TOWN_SUFFIX = ("holm", "wick", "stead", "by", "mouth", "ford", "mere", "gate")
_CREATURE_SUFFIX = ("moth", "finch", "newt", "hare", "shrike", "vole", "carp", "beetle")
_FIRST = (
    "Odile",
    "Bram",
    "Iselde",
    "Corwin",
    "Maelis",
    "Tamsin",
    "Evrard",
    "Liesl",
    "Osric",
    "Yara",
    "Anselm",
    "Petra",
    "Hollis",
    "Runa",
    "Silvan",
    "Wenna",
)


@dataclass(frozen=True)
class Entity:
    """One KB entity; ``attrs`` maps attribute -> value (years as strings)."""

    name: str
    kind: str
    split: str
    attrs: tuple[tuple[str, str], ...]

    def get(self, attribute: str) -> str:
        return dict(self.attrs)[attribute]

    @property
    def label(self) -> str:
        """How prompts refer to the entity ("the town of Kelbrinholm")."""
        return {"town": "the town of {}", "inventor": "the inventor {}", "creature": "the {}"}[self.kind].format(
            self.name
        )


@dataclass(frozen=True)
class KnowledgeBase:
    """All entities of one world."""

    entities: tuple[Entity, ...]

    def of(self, split: str, kind: str | None = None) -> list[Entity]:
        return [e for e in self.entities if e.split == split and (kind is None or e.kind == kind)]

    def domain(self, kind: str, attribute: str) -> tuple[str, ...]:
        """All values an attribute can take (for years: the values present in the KB)."""
        dom = ATTRIBUTES[kind][attribute]
        if dom == "year":
            return tuple(sorted({e.get(attribute) for e in self.entities if e.kind == kind}))
        if dom == "town":
            return tuple(e.name for e in self.entities if e.kind == "town")
        return dom  # type: ignore[return-value]


def _syllables(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(n))


def _name(kind: str, rng: random.Random) -> str:
    if kind == "town":
        return (_syllables(rng, rng.choice((1, 2))) + rng.choice(_TOWN_SUFFIX)).capitalize()
    if kind == "inventor":
        return f"{rng.choice(_FIRST)} {_syllables(rng, 2).capitalize()}"
    return f"{_syllables(rng, 1)}{rng.choice(_CREATURE_SUFFIX)}"


def build_kb(seed: int, counts: dict[str, int] | None = None) -> KnowledgeBase:
    """Generate the KB of world ``seed``: unique names, typed values, splits by fixed shares."""
    counts = counts or {"town": 160, "inventor": 120, "creature": 120}
    rng = make_rng(seed, "kb")
    taken: set[str] = set()
    reserved = {
        w.lower()
        for vals in (REGIONS, RIVERS, EXPORTS, INVENTIONS, TRADES, COLOURS, HABITATS, DIETS)
        for v in vals
        for w in v.split()
    }
    entities: list[Entity] = []
    towns: list[str] = []
    for kind in ("town", "inventor", "creature"):
        n = counts[kind]
        # Exact split shares per kind, then shuffled, so every split gets every kind.
        splits = [s for s, w in zip(SPLITS, _SPLIT_WEIGHTS, strict=True) for _ in range(round(w * n))]
        splits = (splits + ["train"] * n)[:n]
        rng.shuffle(splits)
        for i in range(n):
            while True:
                name = _name(kind, rng)
                if name.lower() not in taken and not ({w.lower() for w in name.split()} & reserved):
                    break
            taken.add(name.lower())
            attrs = []
            for attr, dom in ATTRIBUTES[kind].items():
                if dom == "year":
                    value = str(rng.randint(1150, 1890) if kind == "town" else rng.randint(1600, 1880))
                elif dom == "town":
                    value = rng.choice(towns)
                else:
                    value = rng.choice(dom)  # type: ignore[arg-type]
                attrs.append((attr, value))
            entities.append(Entity(name, kind, splits[i], tuple(attrs)))
            if kind == "town":
                towns.append(name)
    return KnowledgeBase(tuple(entities))
