"""rlexp: does a reward-model benchmark score predict what the reward model is worth downstream?"""

__version__ = "0.1.0"
