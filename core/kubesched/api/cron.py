"""CronJob schedules as kube-apiserver checks them and kube-controller-manager runs them.

Kubernetes reads ``spec.schedule`` with robfig/cron's standard parser: five fields
(minute, hour, day of month, month, day of week; names such as ``jan`` and ``mon``,
``?`` as ``*``), or a descriptor (``@hourly``, ``@daily``/``@midnight``, ``@weekly``,
``@monthly``, ``@yearly``/``@annually``, ``@every <duration>``). :func:`parse_schedule`
checks a schedule field by field the way that parser does, with its messages (which the
API server returns verbatim), and the times themselves come from croniter, which
accepts more than Kubernetes does (seconds, ``L``, ``H``, a Sunday of 7): the checks
run first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

__all__ = ["DESCRIPTORS", "Schedule", "ScheduleError", "load_time_zone", "parse_schedule"]

DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
"""robfig/cron's descriptors and the five fields each stands for."""

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# (minimum, maximum, names) of the five fields, in order.
_FIELDS: tuple[tuple[int, int, dict[str, int] | None], ...] = (
    (0, 59, None),
    (0, 23, None),
    (1, 31, None),
    (1, 12, _MONTHS),
    (0, 6, _DAYS),
)
_GO_INT = re.compile(r"[+-]?[0-9]+")
_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)([^0-9.]*)")
_TZ_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


class ScheduleError(ValueError):
    """A schedule kube-apiserver refuses; the text is robfig/cron's."""


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: five cron fields for croniter, or a constant ``@every`` delay."""

    fields: str | None = None
    every: timedelta | None = None

    def next_after(self, moment: datetime, zone: tzinfo = UTC) -> datetime:
        """The first scheduled time strictly after ``moment``, read in ``zone`` (the
        CronJob's ``timeZone``), returned in UTC."""
        if self.every is not None:
            # robfig's ConstantDelaySchedule: the delay after ``moment``, whole seconds.
            return (moment + self.every).replace(microsecond=0).astimezone(UTC)
        local = moment.astimezone(zone)
        nxt: datetime = croniter(self.fields, local).get_next(datetime)
        return nxt.astimezone(UTC)

    def last_at_or_before(self, moment: datetime, first: datetime, zone: tzinfo = UTC) -> datetime:
        """The latest scheduled time not after ``moment``, for a schedule whose first time
        is ``first`` (an ``@every`` schedule counts its delays from there)."""
        if self.every is not None:
            steps = (moment - first) // self.every
            return first + steps * self.every
        # Times are whole minutes: the latest before a second past ``moment``.
        local = (moment + timedelta(seconds=1)).astimezone(zone)
        prev: datetime = croniter(self.fields, local).get_prev(datetime)
        return prev.astimezone(UTC)


def _go_atoi(text: str) -> int:
    if not _GO_INT.fullmatch(text):
        raise ScheduleError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'
        )
    num = int(text)
    if num < 0:
        raise ScheduleError(f"negative number ({num}) not allowed: {text}")
    return num


def _int_or_name(text: str, names: dict[str, int] | None) -> int:
    if names is not None and text.lower() in names:
        return names[text.lower()]
    return _go_atoi(text)


def _check_range(expr: str, low: int, high: int, names: dict[str, int] | None) -> None:
    """robfig's ``getRange``: ``*``/``?``, ``n``, ``a-b``, each with an optional ``/step``."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _int_or_name(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], names)
        else:
            raise ScheduleError(f"too many hyphens: {expr}")
    step = 1
    if len(range_and_step) == 2:
        step = _go_atoi(range_and_step[1])
        if len(low_and_high) == 1:
            end = high  # "n/step" means "n-max/step"
    elif len(range_and_step) > 2:
        raise ScheduleError(f"too many slashes: {expr}")
    if start < low:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise ScheduleError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expr}")


def _go_duration(text: str) -> timedelta:
    """Go's ``time.ParseDuration`` (``1h30m``, ``90s``, ``1.5h``), with its messages."""
    quoted = f'"{text}"'
    rest = text.lstrip("+-") if text[:1] in "+-" else text
    if text == "0":
        return timedelta(0)
    if not rest:
        raise ScheduleError(f"time: invalid duration {quoted}")
    total = 0.0
    while rest:
        m = _DURATION_PART.match(rest)
        number, unit = (m.group(1), m.group(2)) if m else ("", "")
        if number in ("", ".") or not re.fullmatch(r"[0-9]*\.?[0-9]*", number):
            raise ScheduleError(f"time: invalid duration {quoted}")
        if not unit:
            raise ScheduleError(f"time: missing unit in duration {quoted}")
        if unit not in _DURATION_UNITS:
            raise ScheduleError(f'time: unknown unit "{unit}" in duration {quoted}')
        total += float(number) * _DURATION_UNITS[unit]
        rest = rest[len(number) + len(unit) :]
    if text.startswith("-"):
        total = -total
    return timedelta(seconds=total)


def parse_schedule(text: str) -> Schedule:
    """Parse ``text`` as robfig/cron's ``ParseStandard`` does; ``ScheduleError`` (with its
    message) if it would refuse it. A leading ``TZ=``/``CRON_TZ=`` zone is read past here:
    the CronJob validation refuses it separately."""
    spec = text.strip()
    if not spec:
        raise ScheduleError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        zone, _, spec = spec.partition(" ")
        name = zone.partition("=")[2]
        try:
            load_time_zone(name)
        except ScheduleError as err:
            raise ScheduleError(f"provided bad location {name}: {err}") from None
        spec = spec.strip()
    if spec.startswith("@"):
        if spec.startswith("@every "):
            try:
                delay = _go_duration(spec[len("@every ") :])
            except ScheduleError as err:
                raise ScheduleError(f"failed to parse duration {spec}: {err}") from None
            # robfig's Every: at least a second, whole seconds.
            return Schedule(
                every=max(timedelta(seconds=int(delay.total_seconds())), timedelta(seconds=1))
            )
        if spec in DESCRIPTORS:
            return Schedule(fields=DESCRIPTORS[spec])
        raise ScheduleError(f"unrecognized descriptor: {spec}")
    fields = spec.split()
    if len(fields) != len(_FIELDS):
        raise ScheduleError(
            f"expected exactly {len(_FIELDS)} fields, found {len(fields)}: [{' '.join(fields)}]"
        )
    for field, (low, high, names) in zip(fields, _FIELDS, strict=True):
        for expr in field.split(","):
            _check_range(expr, low, high, names)
    return Schedule(fields=" ".join(f.replace("?", "*").lower() for f in fields))


def load_time_zone(name: str) -> tzinfo:
    """Go's ``time.LoadLocation`` for an IANA name (``""`` and ``UTC`` are UTC);
    ``ScheduleError`` ``unknown time zone <name>`` when there is no such zone."""
    if name in ("", "UTC"):
        return UTC
    if not all(_TZ_PART.match(p) and p not in (".", "..") for p in name.split("/")):
        raise ScheduleError(f"unknown time zone {name}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(f"unknown time zone {name}") from None
