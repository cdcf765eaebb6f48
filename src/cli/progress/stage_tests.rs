//! The progress line's ETA and clock.

use super::*;

#[test]
fn the_first_eta_comes_from_the_plan() {
    let planned = Progress::new(
        ProgressMode::Quiet,
        "s",
        Some(600),
        Some(Duration::from_secs(60)),
    );
    // Nothing done yet: the plan's 60 s are left (a second or so may have passed).
    let t = planned.timing(0);
    assert!(t.contains("ETA 1m00s") || t.contains("ETA 59s"), "{t}");
    let unplanned = Progress::new(ProgressMode::Quiet, "s", Some(600), None);
    assert!(!unplanned.timing(0).contains("ETA"));
}

#[test]
fn clocks_read_at_a_glance() {
    assert_eq!(clock(4.4), "4s");
    assert_eq!(clock(185.0), "3m05s");
    assert_eq!(clock(3720.0), "1h02m");
}
