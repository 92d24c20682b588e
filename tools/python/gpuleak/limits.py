"""The pytest markers' limits, weighed against the reports of one test's own process.

    gpu_limit_leaks("1 MiB")                          no call site may leave more than 1 MiB live
                                                      when the test's process ends
    gpu_limit_growth(per_iteration="1 KiB", warmup=2) live memory at the ends of the iterations
                                                      (gpuleak.iterate) may not grow faster, fitted
                                                      after the first `warmup` iterations
    gpu_limit_peak("2 GiB")                           peak live memory per device

Sizes are written as `gpuleak check` reads them (sizes.h): "100", "512KiB", "1 MiB", "2GB" (KB,
MB, GB decimal; K, KiB, M, MiB, ... binary; a lowercase b after a prefix, "1Mb", is bits and
refused), or an int of bytes. Every function here is pure:
reports in, failure messages out.
"""

import re

_UNITS = {"": 1, "b": 1, "k": 1024, "kib": 1024, "kb": 1000, "m": 1024 ** 2, "mib": 1024 ** 2, "mb": 1000 ** 2,
          "g": 1024 ** 3, "gib": 1024 ** 3, "gb": 1000 ** 3, "t": 1024 ** 4, "tib": 1024 ** 4, "tb": 1000 ** 4}
_SIZE_UNITS = ("units: B; KiB, MiB, GiB, TiB (or K, M, G, T) are 1024-based; KB, MB, GB, TB are 1000-based; "
               'e.g. 512KiB, "1 MiB", 2GB')
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*$")


def parse_size(value, what="size"):
    """Bytes from "1 MiB", "512KiB", "2GB", "100" or an int. ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError("%s: bad size %r" % (what, value))
    if isinstance(value, int):
        if value < 0:
            raise ValueError("%s: bad size %r" % (what, value))
        return value
    m = _SIZE.match(str(value))
    unit = m.group(2).lower() if m else None
    if not m or unit not in _UNITS:
        raise ValueError("%s: bad size %r (%s)" % (what, value, _SIZE_UNITS))
    if len(m.group(2)) >= 2 and m.group(2).endswith("b"):
        # "1Mb" is a bit count: refused, as gpuleak check refuses it (sizes.h).
        raw = m.group(2)
        hint = raw[0].upper() + ("iB" if len(raw) == 3 else "B")
        raise ValueError("%s: bad size %r: a lowercase b is bits; for bytes write %s (%s)" % (what, value, hint, _SIZE_UNITS))
    return int(round(float(m.group(1)) * _UNITS[unit]))


def count_of(n, singular, plural=None):
    """"1 allocation", "3 allocations": the count and its noun, as gpuleak's other outputs say it."""
    return "%d %s" % (n, singular if n == 1 else (plural or singular + "s"))


def format_size(n):
    """Binary units with at most 2 decimals: "512 B", "1 MiB", "1.5 GiB"."""
    sign = "-" if n < 0 else ""
    v = float(abs(n))
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    i = 0
    while v >= 1024 and i < len(units) - 1:
        v /= 1024
        i += 1
    text = "%.0f" % v if i == 0 else ("%.2f" % v).rstrip("0").rstrip(".")
    return "%s%s %s" % (sign, text, units[i])


def check_leaks(reports, limit):
    """Sites with more than `limit` bytes still live at the end of the test's process."""
    failures = []
    for r in reports:
        for site in r.live_at_exit:
            if site.live_bytes > limit:
                failures.append("gpu_limit_leaks: %s left %s live in %s on device %d at the end of "
                                "the test (limit %s) [site %s]" % (site.where, format_size(site.live_bytes),
                                                                  count_of(site.live_count, "allocation"), site.device,
                                                                  format_size(limit), site.site_id))
    return failures


def check_growth(reports, per_iteration, warmup=None):
    """Devices whose live bytes at iteration ends grow faster than `per_iteration` after warm-up.

    The rate is the analysis's own fit (devices[].growth_after_warmup[warmup], the slope `gpuleak
    check --warmup` reads; growth_bytes_per_iteration with the analysis's warm-up): this module
    fits nothing itself. warmup=None uses the analysis's own warm-up
    (report.analysis.warmup_iterations). Fewer than two iterations after the warm-up cannot show
    a rate: that is a failure too, so that a test that lost its gpuleak.iterate() loop does not
    pass silently. A process that never used CUDA writes no report: nothing grew."""
    failures = []
    for r in reports:
        own = r.analysis.warmup_iterations
        skip = own if warmup is None else warmup
        for d in r.devices:
            n = len(r.live_series(d.index, skip))
            fits = d.growth_after_warmup
            if n < 2 or (fits and skip >= len(fits)):
                failures.append("gpu_limit_growth: %d iterations after %d of warm-up on device %d, at least 2 are "
                                "needed (mark the loop with gpuleak.iterate())" % (n, skip, d.index))
                continue
            if fits:
                rate = fits[skip]
            elif skip == own:
                rate = d.growth_bytes_per_iteration
            else:
                failures.append("gpu_limit_growth: this report has no fits per warm-up (devices[].growth_after_warmup):"
                                " warmup=%d needs a report from this gpuleak, or leave warmup unset" % skip)
                continue
            if rate > per_iteration:
                sites = ", ".join("%s %s/iteration" % (l.where, format_size(l.bytes_per_iteration))
                                  for l in r.leaks if l.device == d.index)
                failures.append("gpu_limit_growth: device %d grows %s/iteration over %d iterations after %d of "
                                "warm-up (limit %s/iteration)%s" % (d.index, format_size(rate), n, skip,
                                                                    format_size(per_iteration),
                                                                    "; leaking: " + sites if sites else ""))
    return failures


def check_peak(reports, limit):
    """Devices whose peak live bytes exceed `limit`."""
    failures = []
    for r in reports:
        for d in r.devices:
            if d.peak_live_bytes > limit:
                failures.append("gpu_limit_peak: device %d peaked at %s live (limit %s)"
                                % (d.index, format_size(d.peak_live_bytes), format_size(limit)))
    return failures
