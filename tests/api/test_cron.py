"""CronJob schedules: robfig/cron's syntax and messages (as kube-apiserver v1.36 answers
them), and the times croniter computes from them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kubesched.api.cron import ScheduleError, load_time_zone, parse_schedule

# Each message is what kube-apiserver v1.36.2 returned for the schedule (after
# 'spec.schedule: Invalid value: "<schedule>": '); tests/kube/test_controllers.py asks it.
REFUSED = [
    ("* * *", "expected exactly 5 fields, found 3: [* * *]"),
    ("0 * * * * *", "expected exactly 5 fields, found 6: [0 * * * * *]"),
    ("@fortnightly", "unrecognized descriptor: @fortnightly"),
    ("61 * * * *", "end of range (61) above maximum (59): 61"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("5-2 * * * *", "beginning of range (5) beyond end of range (2): 5-2"),
    ("0 0 * * 7", "end of range (7) above maximum (6): 7"),
    ("H * * * *", 'failed to parse int from H: strconv.Atoi: parsing "H": invalid syntax'),
    ("0 0 L * *", 'failed to parse int from L: strconv.Atoi: parsing "L": invalid syntax'),
    (
        "@every 5x",
        'failed to parse duration @every 5x: time: unknown unit "x" in duration "5x"',
    ),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("*/2/3 * * * *", "too many slashes: */2/3"),
    ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("@every 5", 'failed to parse duration @every 5: time: missing unit in duration "5"'),
]


@pytest.mark.parametrize(("schedule", "message"), REFUSED, ids=[s for s, _ in REFUSED])
def test_refused_schedules_say_what_kube_apiserver_says(schedule: str, message: str):
    with pytest.raises(ScheduleError) as err:
        parse_schedule(schedule)
    assert str(err.value) == message


START = datetime(2026, 1, 1, 0, 0, tzinfo=UTC)  # a Thursday


@pytest.mark.parametrize(
    ("schedule", "zone", "want"),
    [
        ("*/5 * * * *", "", START + timedelta(minutes=5)),
        ("@hourly", "", START + timedelta(hours=1)),
        ("@daily", "", START + timedelta(days=1)),
        ("@midnight", "", START + timedelta(days=1)),
        ("@weekly", "", datetime(2026, 1, 4, tzinfo=UTC)),
        ("@monthly", "", datetime(2026, 2, 1, tzinfo=UTC)),
        ("@yearly", "", datetime(2027, 1, 1, tzinfo=UTC)),
        ("@every 1h30m", "", START + timedelta(minutes=90)),
        ("@every 500ms", "", START + timedelta(seconds=1)),
        ("0 9 * * mon-fri", "", datetime(2026, 1, 1, 9, tzinfo=UTC)),
        ("0 0 ? JAN,Mar SAT", "", datetime(2026, 1, 3, tzinfo=UTC)),
        ("0 9 * * *", "Europe/Berlin", datetime(2026, 1, 1, 8, tzinfo=UTC)),
        ("0 9 * * *", "America/New_York", datetime(2026, 1, 1, 14, tzinfo=UTC)),
    ],
    ids=[
        "every-5-minutes",
        "hourly",
        "daily",
        "midnight",
        "weekly-is-sunday",
        "monthly",
        "yearly",
        "every-duration",
        "every-at-least-a-second",
        "weekdays",
        "names-and-question-mark",
        "time-zone-east",
        "time-zone-west",
    ],
)
def test_next_time(schedule: str, zone: str, want: datetime):
    got = parse_schedule(schedule).next_after(START, load_time_zone(zone))
    assert got == want and got.tzinfo is not None


@pytest.mark.parametrize(
    ("zone", "message"),
    [("Mars/Olympus", "unknown time zone Mars/Olympus"), ("../etc", "unknown time zone ../etc")],
    ids=["no-such-zone", "path-like"],
)
def test_unknown_time_zones(zone: str, message: str):
    with pytest.raises(ScheduleError, match=message):
        load_time_zone(zone)
