//! One process's share of a plan that several processes run together (`--segment I/N`). The
//! plan's schedule slots and iteration numbers are dealt out round-robin: number k belongs to
//! segment k mod N. So the shares add up exactly (1,000 tasks over 3 segments are 334 + 333 +
//! 333, and in every second of a 1,000/s plan the same holds to within one task), a ramp stays a
//! ramp in every segment, iteration numbers never collide, and a `once` data feed's rows are each
//! used by exactly one segment. Worker counts are split the same way, at least one each.

use thiserror::Error;

/// This process's share: segment `index` (0-based, as Kubernetes' `JOB_COMPLETION_INDEX`) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    index: u32,
    count: u32,
}

/// A segment that names no share.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SegmentError {
    /// No segments at all.
    #[error("a plan is split into at least 1 segment")]
    NoSegments,
    /// The index is past the last segment.
    #[error("segment {index} of {count} does not exist: the index is 0-based, from 0 to {last}", last = count - 1)]
    OutOfRange {
        /// The index given.
        index: u32,
        /// The segments there are.
        count: u32,
    },
}

impl Segment {
    /// Segment `index` of `count`.
    pub fn new(index: u32, count: u32) -> Result<Self, SegmentError> {
        if count == 0 {
            return Err(SegmentError::NoSegments);
        }
        if index >= count {
            return Err(SegmentError::OutOfRange { index, count });
        }
        Ok(Self { index, count })
    }

    /// The whole plan as one segment.
    pub fn whole() -> Self {
        Self { index: 0, count: 1 }
    }

    /// The 0-based index.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// How many segments the plan is split into.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Of the numbers `0..total`, how many are this segment's.
    pub fn share_of(&self, total: u64) -> u64 {
        let (index, count) = (u64::from(self.index), u64::from(self.count));
        if total <= index { 0 } else { (total - index - 1) / count + 1 }
    }

    /// This segment's `j`-th number in the whole plan's numbering.
    pub fn global(&self, j: u64) -> u64 {
        u64::from(self.index) + j * u64::from(self.count)
    }

    /// Part `part` of `parts` of this segment: the numbers k with k mod (N·parts) = I + N·part, so
    /// the parts of a segment deal its numbers out round-robin exactly as segments deal the plan's
    /// (`parts` event loops of one process split its share this way).
    pub fn split(&self, part: u32, parts: u32) -> Segment {
        let parts = parts.max(1);
        Segment { index: self.index + self.count * part.min(parts - 1), count: self.count * parts }
    }

    /// This segment's workers out of `total`: an equal split, the remainder to the first
    /// segments, and at least one (a segment with no worker could not run its share).
    pub fn workers(&self, total: u32) -> u32 {
        (total / self.count + u32::from(self.index < total % self.count)).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_exactly_and_never_collide() {
        for count in 1..=7u32 {
            for total in [0u64, 1, 2, 5, 999, 1000, 1001] {
                let segments: Vec<Segment> = (0..count).map(|i| Segment::new(i, count).unwrap()).collect();
                assert_eq!(segments.iter().map(|s| s.share_of(total)).sum::<u64>(), total, "{total} over {count}");
                let mut seen: Vec<u64> =
                    segments.iter().flat_map(|s| (0..s.share_of(total)).map(|j| s.global(j))).collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..total).collect::<Vec<_>>(), "every number once");
            }
        }
        let thirds: Vec<u64> = (0..3).map(|i| Segment::new(i, 3).unwrap().share_of(1000)).collect();
        assert_eq!(thirds, [334, 333, 333]);
    }

    #[test]
    fn the_parts_of_a_segment_deal_exactly_its_numbers() {
        for (index, count) in [(0, 1), (1, 3), (2, 4)] {
            let segment = Segment::new(index, count).unwrap();
            for parts in 1..=4u32 {
                let total = 1001;
                let shares: Vec<u64> = (0..parts).map(|p| segment.split(p, parts).share_of(total)).collect();
                assert_eq!(shares.iter().sum::<u64>(), segment.share_of(total), "{index}/{count} in {parts}");
                let mut mine: Vec<u64> = (0..parts)
                    .flat_map(|p| {
                        let part = segment.split(p, parts);
                        (0..part.share_of(total)).map(move |j| part.global(j))
                    })
                    .collect();
                mine.sort_unstable();
                let expected: Vec<u64> = (0..segment.share_of(total)).map(|j| segment.global(j)).collect();
                assert_eq!(mine, expected, "{index}/{count} in {parts}");
            }
        }
    }

    #[test]
    fn workers_split_with_at_least_one_each() {
        let split =
            |total, count| (0..count).map(|i| Segment::new(i, count).unwrap().workers(total)).collect::<Vec<_>>();
        assert_eq!(split(10, 4), [3, 3, 2, 2]);
        assert_eq!(split(2, 4), [1, 1, 1, 1]);
    }

    #[test]
    fn a_bad_segment_is_named() {
        assert_eq!(Segment::new(0, 0), Err(SegmentError::NoSegments));
        let err = Segment::new(4, 4).unwrap_err().to_string();
        assert!(err.contains("0-based, from 0 to 3"), "{err}");
    }
}
