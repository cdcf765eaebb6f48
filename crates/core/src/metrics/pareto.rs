//! The Pareto front of points where both coordinates are better higher (a sweep's tokens/s
//! per user against tokens/s per GPU; a comparison of server configurations could use it
//! the same way). Kept apart and free of our types so any report can reuse it.

/// Whether `a` dominates `b`: at least as good on both coordinates and better on one. Equal
/// points do not dominate each other, so ties are all on the front.
pub fn dominates(a: (f64, f64), b: (f64, f64)) -> bool {
    a.0 >= b.0 && a.1 >= b.1 && (a.0 > b.0 || a.1 > b.1)
}

/// For each point, `None` when it is on the front, else the index of a point that dominates
/// it: the one furthest ahead (largest sum of gains), the first such on a tie, so the answer
/// does not hang on the order of equal points. A point with a coordinate that is not finite
/// is compared as it is; callers leave such points out (a stage with no figure).
pub fn dominators(points: &[(f64, f64)]) -> Vec<Option<usize>> {
    points
        .iter()
        .map(|&b| {
            let mut best: Option<(usize, f64)> = None;
            for (j, &a) in points.iter().enumerate() {
                if !dominates(a, b) {
                    continue;
                }
                let gain = (a.0 - b.0) + (a.1 - b.1);
                if best.is_none_or(|(_, g)| gain > g) {
                    best = Some((j, gain));
                }
            }
            best.map(|(j, _)| j)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_point_is_the_front() {
        assert_eq!(dominators(&[(1.0, 1.0)]), vec![None]);
        assert_eq!(dominators(&[]), Vec::<Option<usize>>::new());
    }

    #[test]
    fn ties_are_all_on_the_front() {
        let pts = [(2.0, 3.0), (2.0, 3.0)];
        assert_eq!(dominators(&pts), vec![None, None]);
        // Equal on one coordinate, better on the other: dominated.
        let pts = [(2.0, 3.0), (2.0, 4.0)];
        assert_eq!(dominators(&pts), vec![Some(1), None]);
    }

    #[test]
    fn all_dominated_but_one() {
        let pts = [(1.0, 1.0), (5.0, 5.0), (2.0, 4.0), (4.0, 2.0)];
        assert_eq!(dominators(&pts), vec![Some(1), None, Some(1), Some(1)]);
    }

    #[test]
    fn a_trade_off_curve_is_all_front() {
        // More users: less speed each, more in all; each point trades one for the other.
        let pts = [(50.0, 100.0), (40.0, 300.0), (20.0, 500.0)];
        assert_eq!(dominators(&pts), vec![None, None, None]);
        // A point past saturation: slower per user and no more in all.
        let pts = [(50.0, 100.0), (40.0, 300.0), (10.0, 290.0)];
        assert_eq!(dominators(&pts), vec![None, None, Some(1)]);
    }

    #[test]
    fn the_furthest_ahead_is_named() {
        let pts = [(1.0, 1.0), (2.0, 1.0), (3.0, 3.0)];
        assert_eq!(dominators(&pts), vec![Some(2), Some(2), None]);
    }
}
