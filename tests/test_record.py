"""Records (vyre_decl/ir/record.py): what a frozen slotted dataclass gives, without its import cost."""

from __future__ import annotations

import copy
import pickle

import pytest

from vyre_decl.ir.record import FrozenRecordError, Record, record, replace


@record
class Point(Record):
    x: int
    y: int = 0


@record
class Labelled(Point):
    label: str = ""


@record
class Normalised(Record):
    items: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", tuple(self.items))


@record
class CaseInsensitive(Record):
    name: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CaseInsensitive) and self.name.lower() == other.name.lower()

    def __hash__(self) -> int:
        return hash(self.name.lower())


def test_fields_defaults_and_inheritance():
    assert Point(1) == Point(1, 0) == Point(x=1, y=0) and Point(1) != Point(2)
    assert Labelled(1, 2, "a").label == "a" and Labelled.__match_args__ == ("x", "y", "label")
    assert Labelled(1) != Point(1)  # another class is never equal
    assert repr(Labelled(1, label="p")) == "Labelled(x=1, y=0, label='p')"
    assert Normalised([1, 2]).items == (1, 2)


@pytest.mark.parametrize("make, says", [
    (lambda: Point(), "missing 1 required positional argument: 'x'"),
    (lambda: Point(1, 2, 3), "takes from 2 to 3 positional arguments"),
    (lambda: Point(1, x=2), "multiple values for argument 'x'"),
    (lambda: Point(1, z=2), "unexpected keyword argument 'z'"),
])
def test_wrong_arguments_are_type_errors(make, says):
    with pytest.raises(TypeError, match=says):
        make()


def test_immutable_hashable_picklable_and_replaceable():
    p = Labelled(1, 2, "a")
    with pytest.raises(FrozenRecordError):
        p.x = 5  # type: ignore[misc]
    with pytest.raises(FrozenRecordError):
        del p.label  # type: ignore[misc]
    assert not hasattr(p, "__dict__") and Labelled.__slots__ == ("label",)
    assert {p: 1}[Labelled(1, 2, "a")] == 1 and hash(p) == hash(Labelled(1, 2, "a"))
    assert pickle.loads(pickle.dumps(p)) == p and copy.deepcopy(p) == p
    assert replace(p, y=7) == Labelled(1, 7, "a") and p.y == 2
    with pytest.raises(TypeError, match="no field"):
        replace(p, z=1)
    match p:
        case Labelled(x, y, label):
            assert (x, y, label) == (1, 2, "a")


def test_methods_the_class_writes_are_kept():
    assert CaseInsensitive("Ab") == CaseInsensitive("aB") and len({CaseInsensitive("X"), CaseInsensitive("x")}) == 1


def test_a_record_is_a_plain_class_so_isinstance_stays_fast():
    assert type(Point) is type and isinstance(Labelled(1), Point)
    with pytest.raises(TypeError, match="must derive from Record"):
        record(type("Loose", (), {"__annotations__": {"a": "int"}}))



def test_copy_replace_protocol():
    assert Labelled(1).__replace__(label="z") == Labelled(1, 0, "z")
    if hasattr(copy, "replace"):  # Python 3.13
        assert copy.replace(Labelled(1), label="z") == Labelled(1, 0, "z")
