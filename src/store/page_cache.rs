//! SQLite's own page cache, without a walk of all of it at every commit,
//! and with the interior pages of its B-trees kept apart from the leaves
//! (issue #17).
//!
//! When a B-tree page splits, SQLite renumbers the new pages into ascending
//! order and parks one of them under a temporary key meanwhile: the number
//! of the lock-byte page (262,145 with 4 KiB pages), which no database page
//! ever uses. The default cache (`pcache1`) remembers the largest key it was
//! ever given, and every commit truncates the cache to the database's size.
//! With that key remembered, the truncation cannot just shave the last few
//! keys: it walks every slot of its hash table and every page in it. That
//! walk was 2–4 % of the writer thread's time with a 16 MB cache and grows
//! with `cache_size` (a larger cache made the writer slower), until the
//! database passes 1 GiB and the key stops being larger than the database.
//!
//! This wrapper keeps its own largest key, leaving out renumberings to the
//! lock-byte page (the split renumbers that page again before it returns),
//! and passes a truncation on only when a page at or past the limit may be
//! cached. It also keeps interior pages out of the default cache's LRU
//! (`interior`); everything else goes straight to the default cache.

use rusqlite::ffi;
use std::cell::Cell;
use std::ffi::{c_int, c_uint};
use std::sync::OnceLock;

mod interior;
use interior::{InteriorPages, Unpinned};

/// SQLite's locking byte, 1 GiB into the file (`PENDING_BYTE`).
const PENDING_BYTE: u32 = 0x4000_0000;

/// The default cache's methods, saved before ours replace them.
static DEFAULT: OnceLock<Methods> = OnceLock::new();

struct Methods(ffi::sqlite3_pcache_methods2);

// SAFETY: plain function pointers and SQLite's own argument for them, which
// is only ever handed back to SQLite (that serialises its own caches).
unsafe impl Send for Methods {}
unsafe impl Sync for Methods {}

/// One connection's cache: the default cache and the largest key it may hold.
struct Cache {
    inner: *mut ffi::sqlite3_pcache,
    largest_key: c_uint,
    /// The lock-byte page's number at this cache's page size.
    lock_page: c_uint,
    /// Where in a page's extra bytes its key is: past SQLite's own, in the
    /// bytes this wrapper asked the default cache for on top (an unpin
    /// names the page, not its key).
    key_offset: usize,
    /// The size SQLite asked for, in pages.
    size: c_int,
    /// Interior pages held pinned in the default cache, besides its `size`.
    interior: InteriorPages,
    /// Whether this cache keeps interior pages (the writer's does).
    keeps_interior: bool,
}

impl Cache {
    /// Tells the default cache its size: SQLite's, plus the pages kept
    /// pinned here (so that the leaves keep the whole of SQLite's size).
    fn resize(&mut self) {
        let kept = c_int::try_from(self.interior.len()).unwrap_or(c_int::MAX);
        // SAFETY: our own handle to the default cache.
        unsafe { (default().xCachesize.expect("xCachesize"))(self.inner, self.size.saturating_add(kept)) }
    }

    /// Gives every kept page SQLite is not using back to the LRU; true if
    /// there was any (the caller resizes).
    fn release_idle_kept(&mut self) -> bool {
        let idle = self.interior.drain_idle();
        for key in &idle {
            self.unpin_kept(*key);
        }
        !idle.is_empty()
    }

    /// Passes on the held-back unpin of a kept page.
    fn unpin_kept(&mut self, key: c_uint) {
        // SAFETY: a kept page is pinned in the default cache (so a lookup
        // finds it without changing anything) and unused by SQLite.
        unsafe {
            let page = (default().xFetch.expect("xFetch"))(self.inner, key, 0);
            if !page.is_null() {
                (default().xUnpin.expect("xUnpin"))(self.inner, page, 0);
            }
        }
    }
}

/// The bytes this wrapper adds to each page's extra, for its key.
const KEY_BYTES: c_int = 8;

/// # Safety
/// `page` is a page of `cache`, with at least `key_offset + 4` extra bytes.
unsafe fn write_key(cache: &Cache, page: *mut ffi::sqlite3_pcache_page, key: c_uint) {
    // SAFETY: per the function's contract; unaligned to be safe on any layout.
    unsafe {
        let at = ((*page).pExtra as *mut u8).add(cache.key_offset) as *mut c_uint;
        at.write_unaligned(key);
    }
}

/// # Safety
/// As [`write_key`], on a page SQLite fetched through this wrapper.
unsafe fn read_key(cache: &Cache, page: *mut ffi::sqlite3_pcache_page) -> c_uint {
    // SAFETY: written by `fetch` or `rekey` before SQLite saw the page.
    unsafe { (((*page).pExtra as *const u8).add(cache.key_offset) as *const c_uint).read_unaligned() }
}

/// Whether a page holds an interior B-tree page: its header's first byte
/// (after the file header on page 1) is 2 (index) or 5 (table).
///
/// # Safety
/// `page` is a page of a cache whose pages are at least 512 bytes.
unsafe fn is_interior(page: *mut ffi::sqlite3_pcache_page, key: c_uint) -> bool {
    let header = if key == 1 { 100 } else { 0 };
    // SAFETY: per the function's contract.
    matches!(unsafe { *((*page).pBuf as *const u8).add(header) }, 2 | 5)
}

fn default() -> &'static ffi::sqlite3_pcache_methods2 {
    &DEFAULT.get().expect("installed before any cache is created").0
}

/// # Safety
/// `p` is a cache made by `create`, not yet destroyed.
unsafe fn cache<'a>(p: *mut ffi::sqlite3_pcache) -> &'a mut Cache {
    // SAFETY: per the function's contract; SQLite uses a cache from one
    // connection at a time.
    unsafe { &mut *(p as *mut Cache) }
}

unsafe extern "C" fn create(page_size: c_int, extra: c_int, purgeable: c_int) -> *mut ffi::sqlite3_pcache {
    // SAFETY: forwards to the default cache with SQLite's own arguments,
    // and room for the key after SQLite's extra bytes.
    let inner = unsafe { (default().xCreate.expect("xCreate"))(page_size, extra + KEY_BYTES, purgeable) };
    if inner.is_null() {
        return inner;
    }
    let lock_page = u32::try_from(page_size)
        .ok()
        .filter(|size| *size > 0)
        .map_or(c_uint::MAX, |size| PENDING_BYTE / size + 1);
    Box::into_raw(Box::new(Cache {
        inner,
        largest_key: 0,
        lock_page,
        key_offset: usize::try_from(extra).unwrap_or(0),
        size: 0,
        interior: InteriorPages::default(),
        // Pages of 512 bytes or more (always so) have room for a header.
        keeps_interior: purgeable != 0 && page_size >= 512 && KEEPING_INTERIOR.with(Cell::get),
    }))
    .cast()
}

unsafe extern "C" fn cache_size(p: *mut ffi::sqlite3_pcache, pages: c_int) {
    // SAFETY (this and the forwarding functions below): `p` came from
    // `create`; the default cache gets its own handle back.
    let cache = unsafe { cache(p) };
    cache.size = pages.max(0);
    let budget = if cache.keeps_interior {
        cache.size as usize * INTERIOR_PAGES_PER_PAGE
    } else {
        0
    };
    cache.interior.set_budget(budget);
    // A smaller cache (rare: a pragma) starts over; the kept pages in use
    // go at their unpins.
    if cache.interior.len() > budget {
        cache.release_idle_kept();
    }
    cache.resize();
}

unsafe extern "C" fn page_count(p: *mut ffi::sqlite3_pcache) -> c_int {
    unsafe { (default().xPagecount.expect("xPagecount"))(cache(p).inner) }
}

unsafe extern "C" fn fetch(
    p: *mut ffi::sqlite3_pcache,
    key: c_uint,
    create_flag: c_int,
) -> *mut ffi::sqlite3_pcache_page {
    let cache = unsafe { cache(p) };
    let page = unsafe { (default().xFetch.expect("xFetch"))(cache.inner, key, create_flag) };
    if page.is_null() {
        return page;
    }
    if key > cache.largest_key {
        cache.largest_key = key;
    }
    if cache.keeps_interior {
        // SAFETY: a page of this cache, made with room for its key.
        unsafe { write_key(cache, page, key) };
        cache.interior.fetched(key);
    }
    page
}

unsafe extern "C" fn unpin(p: *mut ffi::sqlite3_pcache, page: *mut ffi::sqlite3_pcache_page, discard: c_int) {
    let cache = unsafe { cache(p) };
    if !cache.keeps_interior {
        return unsafe { (default().xUnpin.expect("xUnpin"))(cache.inner, page, discard) };
    }
    // SAFETY: SQLite unpins only pages it fetched through `fetch`.
    let key = unsafe { read_key(cache, page) };
    let kept_before = cache.interior.len();
    let held_back = if discard == 0 && unsafe { is_interior(page, key) } {
        match cache.interior.unpinned(key) {
            Unpinned::Kept => true,
            Unpinned::KeptInstead { evicted } => {
                #[cfg(test)]
                tests::EVICTED.with(|n| n.set(n.get() + 1));
                cache.unpin_kept(evicted);
                true
            }
            Unpinned::Declined => false,
        }
    } else {
        // No longer an interior page, or discarded: no longer kept either.
        cache.interior.released(key);
        false
    };
    if !held_back {
        unsafe { (default().xUnpin.expect("xUnpin"))(cache.inner, page, discard) };
    }
    if cache.interior.len() != kept_before {
        cache.resize();
    }
}

unsafe extern "C" fn rekey(
    p: *mut ffi::sqlite3_pcache,
    page: *mut ffi::sqlite3_pcache_page,
    old_key: c_uint,
    new_key: c_uint,
) {
    let cache = unsafe { cache(p) };
    unsafe { (default().xRekey.expect("xRekey"))(cache.inner, page, old_key, new_key) };
    if cache.keeps_interior {
        // SAFETY: a page of this cache.
        unsafe { write_key(cache, page, new_key) };
    }
    let kept = cache.interior.len();
    cache.interior.rekeyed(old_key, new_key);
    if cache.interior.len() != kept {
        cache.resize();
    }
    #[cfg(test)]
    if new_key == cache.lock_page {
        tests::PARKED.with(|n| n.set(n.get() + 1));
    }
    // The split's temporary key is renumbered again before the split ends.
    if new_key != cache.lock_page && new_key > cache.largest_key {
        cache.largest_key = new_key;
    }
}

unsafe extern "C" fn truncate(p: *mut ffi::sqlite3_pcache, limit: c_uint) {
    let cache = unsafe { cache(p) };
    if limit <= cache.largest_key {
        #[cfg(test)]
        tests::FORWARDED.with(|n| n.set(n.get() + 1));
        unsafe { (default().xTruncate.expect("xTruncate"))(cache.inner, limit) };
        cache.largest_key = limit.saturating_sub(1);
        // The default cache dropped the kept pages past the limit too.
        if cache.interior.truncated(limit) {
            cache.resize();
        }
    } else {
        #[cfg(test)]
        tests::assert_nothing_cached_from(cache, limit);
    }
}

unsafe extern "C" fn destroy(p: *mut ffi::sqlite3_pcache) {
    // SAFETY: made by `Box::into_raw` in `create`; SQLite never uses it again.
    let cache = unsafe { Box::from_raw(p as *mut Cache) };
    unsafe { (default().xDestroy.expect("xDestroy"))(cache.inner) }
}

unsafe extern "C" fn shrink(p: *mut ffi::sqlite3_pcache) {
    // Asked to free what it can: the kept pages not in use go to the LRU first.
    let cache = unsafe { cache(p) };
    if cache.release_idle_kept() {
        cache.resize();
    }
    unsafe { (default().xShrink.expect("xShrink"))(cache.inner) }
}

thread_local! {
    /// Whether caches this thread creates now keep interior pages.
    static KEEPING_INTERIOR: Cell<bool> = const { Cell::new(false) };
}

/// How many interior pages a cache that keeps them may keep, per page of
/// the size SQLite gave it. Interior pages are ≈ 0.6 % of a store's file
/// (≈ 7,000 pages, 28 MB, at 1,000,000 stored runs, 3,091 of them the
/// inbox index's), so the default 16 MiB keeps all of them up to about
/// 2,000,000 runs; a small store has few, and its cache does not grow.
const INTERIOR_PAGES_PER_PAGE: usize = 4;

/// Runs `open` (which opens a connection and settles its page size) with
/// the connection's cache keeping interior pages apart from its LRU: for
/// the writer, whose every command descends the same few B-trees. A
/// reader's cache is emptied by every commit; its kept pages would only
/// cost memory.
pub(super) fn keeping_interior_pages<T>(open: impl FnOnce() -> T) -> T {
    /// Ends the window however `open` returns.
    struct Window;
    impl Drop for Window {
        fn drop(&mut self) {
            KEEPING_INTERIOR.with(|keeping| keeping.set(false));
        }
    }
    KEEPING_INTERIOR.with(|keeping| keeping.set(true));
    let _window = Window;
    open()
}

/// Puts the wrapper in front of the default cache. SQLite accepts a cache
/// only before it initialises (the first connection in the process); after
/// that this returns `false` and the default cache stays, which is correct,
/// only slower. `sqlite3_config` must not race another thread's first use of
/// SQLite: call this before anything else in the process opens a database
/// (`store::sqlite::open` does, first thing).
pub(super) fn install() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        let mut methods = std::mem::MaybeUninit::<ffi::sqlite3_pcache_methods2>::zeroed();
        // SAFETY: GETPCACHE2 writes the current methods into the struct.
        if unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_GETPCACHE2, methods.as_mut_ptr()) }
            != ffi::SQLITE_OK
        {
            return false;
        }
        // SAFETY: filled in by SQLite just above.
        let default = unsafe { methods.assume_init() };
        let complete = default.xCreate.is_some()
            && default.xCachesize.is_some()
            && default.xPagecount.is_some()
            && default.xFetch.is_some()
            && default.xUnpin.is_some()
            && default.xRekey.is_some()
            && default.xTruncate.is_some()
            && default.xDestroy.is_some()
            && default.xShrink.is_some();
        if !complete || DEFAULT.set(Methods(default)).is_err() {
            return false;
        }
        let ours = ffi::sqlite3_pcache_methods2 {
            iVersion: 1,
            pArg: default.pArg,
            xInit: default.xInit,
            xShutdown: default.xShutdown,
            xCreate: Some(create),
            xCachesize: Some(cache_size),
            xPagecount: Some(page_count),
            xFetch: Some(fetch),
            xUnpin: Some(unpin),
            xRekey: Some(rekey),
            xTruncate: Some(truncate),
            xDestroy: Some(destroy),
            xShrink: Some(shrink),
        };
        // SAFETY: SQLite copies the struct; it fails (MISUSE) once initialised.
        unsafe {
            ffi::sqlite3_config(
                ffi::SQLITE_CONFIG_PCACHE2,
                &ours as *const ffi::sqlite3_pcache_methods2,
            ) == ffi::SQLITE_OK
        }
    })
}

#[cfg(test)]
mod tests;
