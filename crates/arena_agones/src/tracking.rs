//! Who is playing: the people an A2S look lists, compared with the last
//! look, as joins and leaves with running totals. Names are the ids: the
//! server makes every name unique. Pure, no I/O.

use std::collections::BTreeSet;

/// The people on the server, and how many came and went since the start.
#[derive(Debug, Default)]
pub struct Tracker {
    present: BTreeSet<String>,
    /// Every join seen, in total.
    pub connects: u64,
    /// Every leave seen, in total.
    pub disconnects: u64,
}

/// What changed between two looks.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub joined: Vec<String>,
    pub left: Vec<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.joined.is_empty() && self.left.is_empty()
    }
}

impl Tracker {
    /// Takes the people listed now; says who joined and who left.
    pub fn update<'a>(&mut self, people: impl IntoIterator<Item = &'a str>) -> Changes {
        let now: BTreeSet<String> = people.into_iter().map(str::to_owned).collect();
        let joined: Vec<String> = now.difference(&self.present).cloned().collect();
        let left: Vec<String> = self.present.difference(&now).cloned().collect();
        self.connects += joined.len() as u64;
        self.disconnects += left.len() as u64;
        self.present = now;
        Changes { joined, left }
    }

    /// Everyone leaves (the server stopped): the leaves of all who were here.
    pub fn clear(&mut self) -> Changes {
        self.update(std::iter::empty())
    }

    pub fn count(&self) -> usize {
        self.present.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_and_leaves_are_counted_once_each() {
        let mut t = Tracker::default();
        assert_eq!(t.update(["Ada", "Bo"]), Changes { joined: vec!["Ada".into(), "Bo".into()], left: vec![] });
        assert!(t.update(["Bo", "Ada"]).is_empty(), "the same people in another order is no change");
        let c = t.update(["Bo", "Cy"]);
        assert_eq!((c.joined, c.left), (vec!["Cy".to_string()], vec!["Ada".to_string()]));
        assert_eq!((t.connects, t.disconnects, t.count()), (3, 1, 2));
        let c = t.clear();
        assert_eq!(c.left, vec!["Bo".to_string(), "Cy".to_string()]);
        assert_eq!((t.connects, t.disconnects, t.count()), (3, 3, 0));
    }

    #[test]
    fn a_name_listed_twice_is_one_person() {
        let mut t = Tracker::default();
        t.update(["Ada", "Ada"]);
        assert_eq!((t.connects, t.count()), (1, 1));
    }
}
