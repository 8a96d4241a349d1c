//! The people an interrupt's notice may go to, kept in memory per tenant
//! (issue #17).
//!
//! Every interrupt a run raises, every reminder and every escalation reads
//! the tenant's principals with an email address (`crate::notify` picks the
//! recipients from them). Read from the database each time, that is a search
//! of every such person on the writer's thread: a create in a tenant of
//! 1,000 people read and decoded 1,000 rows. The writer keeps them instead,
//! tagged with the tenant's directory version (`directory_versions`, set by
//! triggers on every change to a principal, whoever makes it: this process,
//! another instance, the CLI, SQL by hand), and reads the people again only
//! when the version it reads in its own transaction differs.
//!
//! Versions are random (SQLite) or drawn from a sequence (PostgreSQL), never
//! counted: a version seen inside a transaction that was rolled back, with
//! the people read beside it, never names a later directory.

use super::WriteConn;
use crate::args;
use crate::directory::Principal;
use crate::error::Result;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub(crate) const DIRECTORY_VERSION_SQL: &str = "SELECT version FROM directory_versions WHERE tenant = ?";

pub(crate) const LOAD_DIRECTORY_SQL: &str =
    "SELECT id, name, email, groups, roles, is_override FROM principals \
     WHERE tenant = ? AND email IS NOT NULL AND email <> '' ORDER BY id";

/// The tenant's principals that have an email address, read from the
/// database.
fn read_directory(conn: &WriteConn, tenant: &str) -> Result<Vec<Principal>> {
    let rows: Vec<(String, String, Option<String>, String, String, i64)> =
        conn.query_map(LOAD_DIRECTORY_SQL, args![tenant], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
        })?;
    rows.into_iter()
        .map(|(id, name, email, groups, roles, o)| {
            crate::directory::principal_from_columns(
                id,
                tenant.to_string(),
                name,
                email,
                &groups,
                &roles,
                o != 0,
            )
        })
        .collect()
}

/// Tenants kept at most; past this the cache starts over, and each tenant's
/// next notice reads its people again.
const MAX_TENANTS: usize = 1024;

/// A tenant's people with an address, as read at a directory version
/// (`None`: a tenant whose principals have not changed since migration 0029).
struct Kept {
    version: Option<i64>,
    people: Arc<[Principal]>,
}

/// One writer's people to notify, by exact tenant name.
#[derive(Default)]
pub struct DirectoryCache {
    tenants: Mutex<HashMap<String, Kept>>,
}

impl DirectoryCache {
    fn get(&self, tenant: &str, version: Option<i64>) -> Option<Arc<[Principal]>> {
        let tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        tenants
            .get(tenant)
            .filter(|kept| kept.version == version)
            .map(|kept| kept.people.clone())
    }

    fn put(&self, tenant: &str, version: Option<i64>, people: Arc<[Principal]>) {
        let mut tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        if tenants.len() >= MAX_TENANTS && !tenants.contains_key(tenant) {
            tenants.clear();
        }
        tenants.insert(tenant.to_string(), Kept { version, people });
    }
}

/// The tenant's principals that have an email address, in id order: from
/// the writer's cache when the tenant's directory has not changed since.
pub(crate) fn load_directory(conn: &WriteConn, tenant: &str) -> Result<Arc<[Principal]>> {
    // The version before the people: read after it, they are as new or newer
    // (PostgreSQL's statements each see the latest commits), so an entry can
    // be tagged older than its people, and is then read again, never newer.
    let version: Option<i64> = conn.query_scalar(DIRECTORY_VERSION_SQL, args![tenant])?;
    let cache = conn.directory_cache();
    if let Some(people) = cache.get(tenant, version) {
        return Ok(people);
    }
    let people: Arc<[Principal]> = read_directory(conn, tenant)?.into();
    cache.put(tenant, version, people.clone());
    Ok(people)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::EngineError;
    use crate::store::directory::{upsert_principal, IdOwner};

    /// A fresh store (SQLite, or the test PostgreSQL server when one is set).
    async fn store() -> (tempfile::TempDir, super::super::Store) {
        let dir = tempfile::tempdir().unwrap();
        let url = crate::store::testing::database_url(&dir.path().join("d.db"))
            .await
            .unwrap();
        let store = super::super::Store::open(&url, crate::store::Durability::Full)
            .await
            .unwrap();
        (dir, store)
    }

    fn person(id: &str) -> Principal {
        Principal {
            id: id.into(),
            tenant: "t".into(),
            name: id.into(),
            email: Some(format!("{id}@example.com")),
            groups: vec![],
            roles: vec![],
            is_override: false,
        }
    }

    #[test]
    fn an_entry_serves_only_its_tenant_at_its_version() {
        let cache = DirectoryCache::default();
        cache.put("acme", Some(7), vec![person("ann")].into());
        assert_eq!(cache.get("acme", Some(7)).expect("kept")[0].id, "ann");
        assert!(
            cache.get("acme", Some(8)).is_none(),
            "a moved version reads again"
        );
        assert!(cache.get("acme", None).is_none());
        assert!(
            cache.get("acmf", Some(7)).is_none(),
            "one character apart is another tenant"
        );
        cache.put("acme", Some(8), vec![person("bob")].into());
        assert_eq!(cache.get("acme", Some(8)).expect("kept")[0].id, "bob");
        assert!(cache.get("acme", Some(7)).is_none(), "the old version is gone");
    }

    /// A version a rolled-back command saw never serves a later directory
    /// (with versions counted, `bob`'s rolled-back row would come back once
    /// `cat`'s change brought the count to the same number).
    #[tokio::test]
    async fn a_rolled_back_change_is_never_served() {
        let (_dir, store) = store().await;
        let ids = |people: Arc<[Principal]>| people.iter().map(|p| p.id.clone()).collect::<Vec<_>>();
        store
            .write(|conn| upsert_principal(conn, &person("ann"), IdOwner::AnyTenant))
            .await
            .unwrap();
        let kept = store.write(|conn| load_directory(conn, "t")).await.unwrap();
        assert_eq!(ids(kept), ["ann"]);
        let failed = store
            .write(move |conn| {
                upsert_principal(conn, &person("bob"), IdOwner::AnyTenant)?;
                assert_eq!(ids(load_directory(conn, "t")?), ["ann", "bob"]);
                Err::<(), _>(EngineError::Storage("rolled back".into()))
            })
            .await;
        assert!(failed.is_err());
        store
            .write(|conn| upsert_principal(conn, &person("cat"), IdOwner::AnyTenant))
            .await
            .unwrap();
        assert_eq!(
            ids(store.write(|conn| load_directory(conn, "t")).await.unwrap()),
            ["ann", "cat"]
        );
    }

    /// A tenant admin's save never moves an id another tenant holds: the
    /// write itself refuses it, so no check-then-write window lets it through.
    #[tokio::test]
    async fn a_tenant_save_never_takes_another_tenants_id() {
        let (_dir, store) = store().await;
        store
            .write(|conn| upsert_principal(conn, &person("ann"), IdOwner::AnyTenant))
            .await
            .unwrap();
        let taken = Principal {
            tenant: "u".into(),
            name: "Not Ann".into(),
            ..person("ann")
        };
        let refused = store
            .write({
                let taken = taken.clone();
                move |conn| upsert_principal(conn, &taken, IdOwner::SameTenant)
            })
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, EngineError::Conflict(m) if m.contains("already taken") && !m.contains("\"t\"")),
            "{refused:?}"
        );
        let kept = store.write(|conn| load_directory(conn, "t")).await.unwrap();
        assert_eq!(
            (kept[0].id.as_str(), kept[0].name.as_str()),
            ("ann", person("ann").name.as_str())
        );
        assert!(store
            .write(|conn| load_directory(conn, "u"))
            .await
            .unwrap()
            .is_empty());
        // Its own tenant's admin edits it; the operator may move it.
        let renamed = Principal {
            name: "Ann B.".into(),
            ..person("ann")
        };
        store
            .write(move |conn| upsert_principal(conn, &renamed, IdOwner::SameTenant))
            .await
            .unwrap();
        store
            .write(move |conn| upsert_principal(conn, &taken, IdOwner::AnyTenant))
            .await
            .unwrap();
        assert_eq!(
            store.write(|conn| load_directory(conn, "u")).await.unwrap()[0].name,
            "Not Ann"
        );
    }

    #[test]
    fn a_full_cache_starts_over() {
        let cache = DirectoryCache::default();
        for i in 0..MAX_TENANTS {
            cache.put(&format!("t{i}"), None, vec![].into());
        }
        cache.put("t0", Some(1), vec![].into());
        assert!(
            cache.get("t1", None).is_some(),
            "a kept tenant's update keeps the rest"
        );
        cache.put("new", None, vec![].into());
        assert!(cache.get("t1", None).is_none());
        assert!(cache.get("new", None).is_some());
    }
}
