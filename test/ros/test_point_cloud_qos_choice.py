"""The cloud subscription's QoS: ``point_cloud_reliability`` values, the profile, and what
``auto`` picks for a set of publishers (``ros.qos``, ``ros.point_cloud_subscription``)."""
import math

import pytest
from rclpy.qos import DurabilityPolicy, HistoryPolicy, ReliabilityPolicy

from my_collision_pkg.ros.point_cloud_subscription import CloudCounts, check_reliability
from my_collision_pkg.ros.qos import (POINT_CLOUD_QOS, POINT_CLOUD_RELIABILITIES, point_cloud_qos,
                                      reliability_for_publishers)
from my_collision_pkg.ros.runtime import ConfigurationError

RELIABLE, BEST_EFFORT = ReliabilityPolicy.RELIABLE, ReliabilityPolicy.BEST_EFFORT


@pytest.mark.parametrize("offered, chosen", [
    ([], BEST_EFFORT),                                  # nobody yet: best effort matches whoever comes
    ([RELIABLE], RELIABLE),
    ([RELIABLE, RELIABLE], RELIABLE),
    ([BEST_EFFORT], BEST_EFFORT),
    ([RELIABLE, BEST_EFFORT], BEST_EFFORT),             # reliable would not match the best-effort one
])
def test_auto_is_reliable_only_when_every_publisher_is(offered, chosen):
    assert reliability_for_publishers(iter(offered)) == chosen


def test_the_profile_is_depth_1_volatile_with_the_reliability_asked():
    for name, policy in [("reliable", RELIABLE), ("best_effort", BEST_EFFORT), (RELIABLE, RELIABLE)]:
        qos = point_cloud_qos(name)
        assert (qos.reliability, qos.depth, qos.history, qos.durability) == \
            (policy, 1, HistoryPolicy.KEEP_LAST, DurabilityPolicy.VOLATILE)
    assert POINT_CLOUD_QOS.reliability == BEST_EFFORT          # the old constant keeps its meaning
    with pytest.raises(ValueError, match="auto"):
        point_cloud_qos("auto")                                 # resolved by the subscription, not here


def test_the_parameter_values():
    assert POINT_CLOUD_RELIABILITIES == ("auto", "reliable", "best_effort")
    for value in POINT_CLOUD_RELIABILITIES:
        assert check_reliability(value) == value
    for bad in ["", "fast", "RELIABLE", "best effort", 1, 0.0, math.nan, True, None, ["reliable"]]:
        with pytest.raises(ConfigurationError, match="parameter 'point_cloud_reliability' must be one of "
                                                     "auto, reliable, best_effort"):
            check_reliability(bad)


def test_the_summary_line_gives_counts_and_rates():
    counts = CloudCounts(received=31, applied=7, skipped=1, refused=0, replaced=23, first_s=10.0, last_s=11.0,
                         policy="best_effort")
    line = counts.summary("/camera/points")
    assert line == ("point clouds on '/camera/points' (best_effort): 31 received in 1.0 s (30.0/s), 7 applied "
                    "(6.0/s), 1 skipped (octomap_max_update_rate_hz), 0 refused, 23 replaced by a newer cloud "
                    "before the map was free")
