//! Which interior B-tree pages a cache keeps out of its LRU (issue #17).
//!
//! At a million stored runs a resolve read about two pages more than at
//! 40,000, a quarter of all its reads interior pages of the interrupts'
//! table and inbox index: each resolve's fresh leaves pushed them out of a
//! 16 MiB LRU, although they are ≈ 0.6 % of the file and every resolve
//! passes through them. So the cache keeps interior pages apart, up to a
//! budget (`INTERIOR_PAGES_PER_PAGE`), evicting among them by CLOCK (a page
//! used since the hand last passed gets another round), and leaves the LRU
//! to the leaves. A small store has few interior pages, so its cache does
//! not grow.
//!
//! The default cache evicts only unpinned pages, so a kept page is one whose
//! unpin the wrapper held back: it stays pinned there until it is evicted
//! here (its unpin passed on then), discarded or truncated by SQLite, or
//! stops being an interior page. This type is the bookkeeping only; it never
//! touches a page.

use std::ffi::c_uint;

/// One bit per page number, growing as larger numbers are set.
#[derive(Default)]
struct Bits(Vec<u64>);

impl Bits {
    fn get(&self, key: c_uint) -> bool {
        let key = key as usize;
        self.0
            .get(key / 64)
            .is_some_and(|word| word & (1 << (key % 64)) != 0)
    }

    fn set(&mut self, key: c_uint) {
        let key = key as usize;
        if self.0.len() <= key / 64 {
            self.0.resize(key / 64 + 1, 0);
        }
        self.0[key / 64] |= 1 << (key % 64);
    }

    fn clear(&mut self, key: c_uint) {
        let key = key as usize;
        if let Some(word) = self.0.get_mut(key / 64) {
            *word &= !(1 << (key % 64));
        }
    }
}

/// What to do with an interior page SQLite unpinned.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Unpinned {
    /// Kept (or still kept): hold the unpin back.
    Kept,
    /// Kept in place of `evicted`, whose held-back unpin is now due.
    KeptInstead { evicted: c_uint },
    /// Not kept (every kept page is in use or was used since the hand
    /// passed): pass the unpin on.
    Declined,
}

#[derive(Default)]
pub(super) struct InteriorPages {
    /// Pages kept here, in use by SQLite or not.
    kept: Bits,
    /// Kept pages SQLite has not fetched since it last unpinned them: only
    /// these may be evicted (an unpin passed on for a page in use would let
    /// the default cache recycle it under SQLite).
    idle: Bits,
    /// Kept pages unpinned since the clock's hand last passed them.
    referenced: Bits,
    /// The kept pages in the clock's order.
    ring: Vec<c_uint>,
    hand: usize,
    /// How many pages may be kept.
    budget: usize,
}

impl InteriorPages {
    pub(super) fn set_budget(&mut self, pages: usize) {
        self.budget = pages;
    }

    /// How many pages are kept.
    pub(super) fn len(&self) -> usize {
        self.ring.len()
    }

    /// SQLite fetched `key`: if kept, it is in use until its next unpin.
    #[inline]
    pub(super) fn fetched(&mut self, key: c_uint) {
        if self.idle.get(key) {
            self.idle.clear(key);
        }
    }

    /// SQLite unpinned `key`, an interior page.
    pub(super) fn unpinned(&mut self, key: c_uint) -> Unpinned {
        if self.kept.get(key) {
            if self.ring.len() > self.budget {
                // The budget shrank while this page was in use.
                self.released(key);
                return Unpinned::Declined;
            }
            self.idle.set(key);
            self.referenced.set(key);
            return Unpinned::Kept;
        }
        if self.ring.len() < self.budget {
            self.ring.push(key);
            self.mark_kept(key);
            return Unpinned::Kept;
        }
        match self.evict() {
            Some(slot) => {
                let evicted = std::mem::replace(&mut self.ring[slot], key);
                self.unmark(evicted);
                self.mark_kept(key);
                Unpinned::KeptInstead { evicted }
            }
            None => Unpinned::Declined,
        }
    }

    /// SQLite unpinned or discarded `key`, and it is not to be kept (no
    /// longer an interior page, or gone): forgets it; true if it was kept.
    pub(super) fn released(&mut self, key: c_uint) -> bool {
        if !self.kept.get(key) {
            return false;
        }
        if let Some(slot) = self.ring.iter().position(|k| *k == key) {
            self.remove_slot(slot);
        }
        true
    }

    /// SQLite renumbered a page it holds from `old` to `new`.
    pub(super) fn rekeyed(&mut self, old: c_uint, new: c_uint) {
        // Whatever the cache held under `new` is gone.
        self.released(new);
        if !self.kept.get(old) {
            return;
        }
        let (idle, referenced) = (self.idle.get(old), self.referenced.get(old));
        self.unmark(old);
        if let Some(slot) = self.ring.iter().position(|k| *k == old) {
            self.ring[slot] = new;
        }
        self.kept.set(new);
        if idle {
            self.idle.set(new);
        }
        if referenced {
            self.referenced.set(new);
        }
    }

    /// The cache dropped every page from `limit` on; true if any was kept.
    pub(super) fn truncated(&mut self, limit: c_uint) -> bool {
        let before = self.ring.len();
        let mut slot = 0;
        while slot < self.ring.len() {
            if self.ring[slot] >= limit {
                self.remove_slot(slot);
            } else {
                slot += 1;
            }
        }
        self.ring.len() != before
    }

    /// Forgets every idle kept page and returns them (their unpins are due).
    pub(super) fn drain_idle(&mut self) -> Vec<c_uint> {
        let (idle, in_use): (Vec<c_uint>, Vec<c_uint>) =
            self.ring.iter().partition(|key| self.idle.get(**key));
        for key in &idle {
            self.unmark(*key);
        }
        self.ring = in_use;
        self.hand = 0;
        idle
    }

    /// The slot of an idle kept page not referenced since the hand last
    /// passed, clearing references on the way; `None` after two full turns.
    fn evict(&mut self) -> Option<usize> {
        for _ in 0..self.ring.len() * 2 {
            let slot = self.hand % self.ring.len();
            self.hand = slot + 1;
            let key = self.ring[slot];
            if !self.idle.get(key) {
                continue;
            }
            if self.referenced.get(key) {
                self.referenced.clear(key);
                continue;
            }
            return Some(slot);
        }
        None
    }

    fn mark_kept(&mut self, key: c_uint) {
        self.kept.set(key);
        self.idle.set(key);
        self.referenced.set(key);
    }

    fn unmark(&mut self, key: c_uint) {
        self.kept.clear(key);
        self.idle.clear(key);
        self.referenced.clear(key);
    }

    fn remove_slot(&mut self, slot: usize) {
        let key = self.ring.swap_remove(slot);
        self.unmark(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages(budget: usize) -> InteriorPages {
        let mut pages = InteriorPages::default();
        pages.set_budget(budget);
        pages
    }

    #[test]
    fn pages_are_kept_up_to_the_budget_then_the_clock_picks_an_unused_one() {
        let mut kept = pages(3);
        for key in [10, 20, 30] {
            assert_eq!(kept.unpinned(key), Unpinned::Kept);
        }
        assert_eq!(kept.len(), 3);
        // 20 is used again: the hand's first turn clears every reference,
        // its second finds 10 first.
        kept.fetched(20);
        assert_eq!(kept.unpinned(20), Unpinned::Kept);
        assert_eq!(kept.unpinned(40), Unpinned::KeptInstead { evicted: 10 });
        // 20 and 30 lost their references in that turn, 40 has its own.
        assert_eq!(kept.unpinned(50), Unpinned::KeptInstead { evicted: 20 });
        assert_eq!(kept.len(), 3);
        assert!(!kept.released(10), "an evicted page is no longer kept");
    }

    #[test]
    fn a_page_in_use_is_never_evicted() {
        let mut kept = pages(2);
        kept.unpinned(1);
        kept.unpinned(2);
        kept.fetched(1);
        kept.fetched(2);
        assert_eq!(kept.unpinned(3), Unpinned::Declined, "both kept pages are in use");
        // 2 comes back: only it may go, after losing its reference.
        assert_eq!(kept.unpinned(2), Unpinned::Kept);
        assert_eq!(kept.unpinned(3), Unpinned::KeptInstead { evicted: 2 });
        // 1 is still in use: its unpin, when it comes, keeps it.
        assert_eq!(kept.unpinned(1), Unpinned::Kept);
    }

    #[test]
    fn a_page_in_use_when_the_budget_shrinks_goes_at_its_unpin() {
        let mut kept = pages(2);
        kept.unpinned(1);
        kept.unpinned(2);
        kept.fetched(2);
        kept.set_budget(0);
        assert_eq!(kept.drain_idle(), vec![1]);
        assert_eq!(kept.len(), 1, "2 is in use and stays until its unpin");
        assert_eq!(kept.unpinned(2), Unpinned::Declined);
        assert_eq!(kept.len(), 0);
        assert!(!kept.released(2));
    }

    #[test]
    fn released_truncated_and_renumbered_pages_leave_no_trace() {
        let mut kept = pages(8);
        for key in [5, 70, 130, 200] {
            kept.unpinned(key);
        }
        assert!(kept.released(70));
        assert!(!kept.released(70));
        assert!(!kept.released(71), "never kept");
        assert!(kept.truncated(130));
        assert!(!kept.truncated(130), "nothing left at 130 or past it");
        assert_eq!(kept.len(), 1);
        // 5 is renumbered while in use, and is still kept under its new key.
        kept.fetched(5);
        kept.rekeyed(5, 300);
        assert!(!kept.released(5));
        assert_eq!(kept.unpinned(300), Unpinned::Kept);
        // A renumbering onto a kept key drops the page that was there.
        kept.unpinned(9);
        kept.fetched(300);
        kept.rekeyed(300, 9);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept.drain_idle(), Vec::<c_uint>::new(), "9 is in use");
        assert_eq!(kept.unpinned(9), Unpinned::Kept);
        assert_eq!(kept.drain_idle(), vec![9]);
        assert_eq!(kept.len(), 0);
    }
}
