"""Public schema of the UCI Adult data set (declared, never derived from the data).

Every constant in this module is *public information*: the category lists are copied from the
UCI documentation file ``adult.names`` (Becker & Kohavi, 1996), and the numeric ranges are
declared domain bounds (see :data:`NUMERIC_RANGES` for the provenance of each). None of them is
computed from the records, so encoding a record never reveals anything about the other records,
and the encoding of one row is the same whether it is encoded alone or with the full data set.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

#: Column order of the raw files ``adult.data`` / ``adult.test`` (15 fields, the last is the label).
RAW_COLUMNS: Tuple[str, ...] = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)

#: The 14 attribute columns (everything but the label).
FEATURE_COLUMNS: Tuple[str, ...] = RAW_COLUMNS[:-1]

#: Token used by the UCI files for an unknown value.
MISSING_TOKEN = "?"

#: Declared category lists, verbatim from ``adult.names`` (UCI Machine Learning Repository).
CATEGORIES: Dict[str, Tuple[str, ...]] = {
    "workclass": (
        "Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
        "Without-pay", "Never-worked",
    ),
    "education": (
        "Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc",
        "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate", "5th-6th", "Preschool",
    ),
    "marital-status": (
        "Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
        "Married-spouse-absent", "Married-AF-spouse",
    ),
    "occupation": (
        "Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
        "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
        "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv", "Armed-Forces",
    ),
    "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "sex": ("Female", "Male"),
    "native-country": (
        "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
        "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba", "Iran",
        "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico", "Portugal",
        "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan", "Haiti", "Columbia",
        "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand", "Yugoslavia", "El-Salvador",
        "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands",
    ),
}

CATEGORICAL_COLUMNS: Tuple[str, ...] = tuple(c for c in FEATURE_COLUMNS if c in CATEGORIES)

#: Declared numeric domains ``(low, high, scale)``. After clipping to ``[low, high]`` a value ``v``
#: is mapped to ``[0, 1]`` by ``t(v) = (g(v) - g(low)) / (g(high) - g(low))`` with ``g(v) = v``
#: (``"linear"``), ``g(v) = log(v)`` (``"log"``) or ``g(v) = log(1 + v)`` (``"log1p"``, for the
#: heavy-tailed, mostly-zero capital columns).
#:
#: Provenance (public, data-independent):
#:
#: * ``age`` 17–90: the extraction condition in ``adult.names`` is ``AGE > 16``; the Census
#:   Bureau public-use files top-code age at 90.
#: * ``fnlwgt`` 1,000–10,000,000 on a log scale: a deliberately wide declared envelope for the CPS
#:   final sampling weight (a person count; ``adult.names`` describes it as the number of people
#:   the record stands for), set from orders of magnitude, not from the records. Values outside it
#:   are clipped when ``clip=True`` and rejected otherwise.
#: * ``education-num`` 1–16: the 16 declared education levels (``adult.names``).
#: * ``capital-gain`` 0–99,999 on a log1p scale: the CPS top-code (99999 is the ceiling code).
#: * ``capital-loss`` 0–99,999 on a log1p scale: the same five-digit CPS income field and
#:   top-code as ``capital-gain`` (a bound read off the records, such as their maximum, would
#:   leak information and is never used).
#: * ``hours-per-week`` 1–99: the CPS field is two digits, top-coded at 99.
NUMERIC_RANGES: Dict[str, Tuple[float, float, str]] = {
    "age": (17.0, 90.0, "linear"),
    "fnlwgt": (1.0e3, 1.0e7, "log"),
    "education-num": (1.0, 16.0, "linear"),
    "capital-gain": (0.0, 99999.0, "log1p"),
    "capital-loss": (0.0, 99999.0, "log1p"),
    "hours-per-week": (1.0, 99.0, "linear"),
}

NUMERIC_COLUMNS: Tuple[str, ...] = tuple(c for c in FEATURE_COLUMNS if c in NUMERIC_RANGES)

#: The positive class (label +1).
POSITIVE_LABEL = ">50K"
#: The negative class (label -1).
NEGATIVE_LABEL = "<=50K"


def feature_names(missing: str = "indicator") -> List[str]:
    """Names of the encoded columns, in order: numeric columns, then one-hot blocks.

    With ``missing="indicator"`` every categorical block ends with a ``<column>=?`` column.
    """
    names: List[str] = list(NUMERIC_COLUMNS)
    for col in CATEGORICAL_COLUMNS:
        names.extend(f"{col}={cat}" for cat in CATEGORIES[col])
        if missing == "indicator":
            names.append(f"{col}={MISSING_TOKEN}")
    return names
