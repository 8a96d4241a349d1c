//! Console-facing reads: the inbox of a person (who may decide what,
//! computed with the same `ApprovalRules::eligibility` the resolve path
//! uses) and who may still vote on a gate. Sign-in: `sign_in.rs`.

use super::Engine;
use crate::approval::{agreeing_approvals, approved_data, ApprovalRules, Ballot};
use crate::clock::{rfc3339, Millis};
use crate::directory::{Actor, Principal};
use crate::error::{EngineError, Result};
use crate::store::inbox::{contains_pattern, Admitted, Narrow, PageQuery};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use tollgate_wire::{ApprovalAction, DeadlineState, InterruptKind, InterruptStatus, RunId};

/// Items per inbox page.
pub const INBOX_PAGE_SIZE: usize = 50;

/// A deadline closer than this is "soon".
pub const DEADLINE_SOON_MS: Millis = 60 * 60 * 1000;

/// How the inbox is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InboxSort {
    /// Newest first.
    #[default]
    Newest,
    Oldest,
    /// Soonest deadline first; interrupts without a deadline last.
    Deadline,
}

impl InboxSort {
    pub fn parse(s: &str) -> InboxSort {
        match s {
            "oldest" => InboxSort::Oldest,
            "deadline" => InboxSort::Deadline,
            _ => InboxSort::Newest,
        }
    }
}

/// The longest inbox search, in characters.
pub const SEARCH_MAX_CHARS: usize = 200;

const DAY_MS: Millis = 24 * 60 * 60 * 1000;

/// The inbox's deadline filter (`?due=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxDue {
    /// The deadline has passed.
    Overdue,
    /// Not yet passed, and within the next 24 hours.
    Day,
    /// Not yet passed, and within the next 7 days.
    Week,
    /// No deadline.
    Never,
}

impl InboxDue {
    pub const TEXTS: [&'static str; 4] = ["overdue", "day", "week", "never"];

    pub fn as_str(self) -> &'static str {
        match self {
            InboxDue::Overdue => "overdue",
            InboxDue::Day => "day",
            InboxDue::Week => "week",
            InboxDue::Never => "never",
        }
    }

    /// `?due=`: empty or absent is no filter, anything else one of [`InboxDue::TEXTS`] (else 400 naming `due`).
    pub fn parse_param(value: Option<&str>) -> Result<Option<InboxDue>> {
        Ok(match value.unwrap_or("") {
            "" => None,
            "overdue" => Some(InboxDue::Overdue),
            "day" => Some(InboxDue::Day),
            "week" => Some(InboxDue::Week),
            "never" => Some(InboxDue::Never),
            other => {
                return Err(EngineError::validation(
                    "due",
                    format!("due: {other:?} is not one of {}", Self::TEXTS.join(", ")),
                ))
            }
        })
    }
}

/// Filters of the inbox (all optional).
#[derive(Debug, Clone, Default)]
pub struct InboxFilter {
    pub kind: Option<InterruptKind>,
    pub workflow_id: Option<String>,
    pub due: Option<InboxDue>,
    /// Text to find in the title or the request data (case-insensitive for
    /// ASCII letters, at most [`SEARCH_MAX_CHARS`]; blank is no search).
    pub search: Option<String>,
    pub sort: InboxSort,
    /// 1-based.
    pub page: usize,
    /// The person whose decisions to list, who has delegated them to the
    /// viewer now (`None`: the viewer's own).
    pub on_behalf_of: Option<String>,
}

pub use tollgate_wire::inbox::{BulkResult, InboxItem};

/// The most picks one "Approve / Reject selected" takes: one inbox page.
pub const BULK_MAX_PICKS: usize = INBOX_PAGE_SIZE;

/// A page of the inbox.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InboxPage {
    pub items: Vec<InboxItem>,
    /// Matching interrupts this person may decide, over all pages.
    pub total: usize,
    pub page: usize,
    pub pages: usize,
    /// Workflows and kinds among everything this person may decide (for the filters).
    pub workflows: Vec<String>,
    pub kinds: Vec<InterruptKind>,
    /// Whose decisions these are when not the viewer's own.
    pub on_behalf_of: Option<Voter>,
    /// The live delegations to the viewer: people whose decisions they
    /// take now, and interrupts reassigned to them.
    pub delegated: Vec<tollgate_wire::delegation::Delegation>,
}

/// How the rules admit a person to decide: the ref, and the person whose
/// seat they take when they decide in someone else's place.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Admission {
    pub via: String,
    pub on_behalf_of: Option<Voter>,
}

/// A person who may still vote on a gate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Voter {
    pub id: String,
    pub name: String,
    pub eligible_via: String,
}

/// Whether `principal` may decide an interrupt of `kind` with these stored
/// rules; `holds_respond` as for [`ApprovalRules::eligibility`].
pub(super) fn eligible(
    kind: InterruptKind,
    eligibility: &str,
    requesters: &[impl AsRef<str>],
    principal: &Principal,
    holds_respond: bool,
) -> Result<String> {
    let rules: Option<ApprovalRules> = if kind == InterruptKind::Approval {
        Some(
            serde_json::from_str(eligibility)
                .map_err(|e| EngineError::Storage(format!("interrupts.eligibility: {e}")))?,
        )
    } else {
        None
    };
    eligible_by(kind, rules.as_ref(), requesters, principal, holds_respond)
}

/// [`eligible`] on decoded rules: the one "may decide" rule of every surface.
/// Without `approvals:respond` nobody decides; an approval gate admits by
/// its rules (refs, self-approval); any other kind admits anyone of the
/// run's tenant (the caller has checked the tenant).
pub(super) fn eligible_by(
    kind: InterruptKind,
    rules: Option<&ApprovalRules>,
    requesters: &[impl AsRef<str>],
    principal: &Principal,
    holds_respond: bool,
) -> Result<String> {
    if !holds_respond {
        return Err(EngineError::Forbidden(format!(
            "{} does not hold approvals:respond",
            principal.id
        )));
    }
    if kind == InterruptKind::Approval {
        let rules = rules.ok_or_else(|| {
            EngineError::Storage("interrupts.eligibility: an approval without rules".into())
        })?;
        rules.eligibility(principal, requesters, holds_respond)
    } else {
        // Other kinds: anyone of the run's tenant may answer (as over the API).
        Ok(format!("tenant:{}", principal.tenant))
    }
}

/// What a filter narrows the inbox to beyond its groups, checked.
fn narrow_of(filter: &InboxFilter, now: Millis) -> Result<Narrow> {
    let mut narrow = Narrow::default();
    match filter.due {
        None => {}
        Some(InboxDue::Overdue) => narrow.deadline_by = Some(now),
        Some(InboxDue::Day) => (narrow.deadline_after, narrow.deadline_by) = (Some(now), Some(now + DAY_MS)),
        Some(InboxDue::Week) => {
            (narrow.deadline_after, narrow.deadline_by) = (Some(now), Some(now + 7 * DAY_MS))
        }
        Some(InboxDue::Never) => narrow.no_deadline = true,
    }
    if let Some(q) = filter.search.as_deref().map(str::trim).filter(|q| !q.is_empty()) {
        if q.chars().count() > SEARCH_MAX_CHARS {
            return Err(EngineError::validation(
                "q",
                format!("q: a search is at most {SEARCH_MAX_CHARS} characters"),
            ));
        }
        narrow.pattern = Some(contains_pattern(q));
    }
    Ok(narrow)
}

pub(super) fn deadline_state(deadline: Option<Millis>, now: Millis) -> DeadlineState {
    match deadline {
        None => DeadlineState::None,
        Some(d) if d <= now => DeadlineState::Overdue,
        Some(d) if d - now <= DEADLINE_SOON_MS => DeadlineState::Soon,
        Some(_) => DeadlineState::Ok,
    }
}

impl Engine {
    /// `overdue`, `soon`, `ok` or `none` for an RFC 3339 deadline, as the inbox marks it.
    pub fn deadline_state(&self, deadline: Option<&str>) -> DeadlineState {
        let ms = deadline
            .and_then(|d| chrono::DateTime::parse_from_rfc3339(d).ok())
            .map(|d| d.timestamp_millis());
        deadline_state(ms, self.now())
    }

    /// The pending interrupts of the principal's tenant that `principal` may
    /// decide, filtered, sorted and cut into pages of [`INBOX_PAGE_SIZE`].
    ///
    /// Eligibility is decided once per group of interrupts that share a kind,
    /// stored rules and workflow, and whether this person started the run
    /// (the only thing about the owner the rules look at, see
    /// [`ApprovalRules::eligibility`]); SQLite then counts, sorts and cuts the
    /// page over the groups that admit the person, so only one page of rows
    /// leaves the database however many are pending.
    pub async fn pending_for(&self, principal: &Principal, filter: &InboxFilter) -> Result<InboxPage> {
        let now = self.now();
        let narrow = narrow_of(filter, now)?;
        // Membership as it is now, the same entry the resolve path reads.
        let viewer = self
            .principal(&principal.id)
            .await?
            .unwrap_or_else(|| principal.clone());
        let delegated = self.delegated_to(&viewer).await?;
        let mut narrow = narrow;
        // Whose seat the page is for: the viewer's, or a delegator's.
        let principal = match filter.on_behalf_of.as_deref() {
            None => viewer.clone(),
            Some(id) => {
                let holds = delegated
                    .iter()
                    .any(|d| d.interrupt.is_none() && d.delegator == id);
                let delegator = match self.principal(id).await? {
                    Some(p) if holds && p.tenant == viewer.tenant => p,
                    _ => {
                        return Err(EngineError::Forbidden(format!(
                            "{} does not hold {id}'s decisions now",
                            viewer.id
                        )))
                    }
                };
                // A delegate never decides their own requests, whoever's seat.
                narrow.not_owner = Some(viewer.id.clone());
                delegator
            }
        };
        let store = &self.inner.store;
        let groups = store.inbox_groups(&principal.tenant, &principal.id).await?;
        let mut workflows = Vec::new();
        let mut kinds = Vec::new();
        // (kind, eligibility, workflow, mine, via) of the groups that admit this person and match the filter.
        let mut admitted = Vec::new();
        let mut total = 0usize;
        for g in groups {
            let parsed: InterruptKind = g.kind.parse()?;
            // The inbox is a signed-in person's: people hold approvals:respond.
            let Ok(via) = eligible(parsed, &g.eligibility, &[&g.owner], &principal, true) else {
                continue;
            };
            if !workflows.contains(&g.workflow_id) {
                workflows.push(g.workflow_id.clone());
            }
            if !kinds.contains(&parsed) {
                kinds.push(parsed);
            }
            if filter.kind.is_some_and(|k| k != parsed)
                || filter.workflow_id.as_ref().is_some_and(|w| *w != g.workflow_id)
            {
                continue;
            }
            total += g.count as usize;
            admitted.push(Admitted {
                group_key: g.group_key,
                mine: g.mine,
                via,
                eligibility: g.eligibility,
            });
        }
        workflows.sort();
        kinds.sort_by_key(|k| k.as_str());

        // The kept counts answer the plain inbox; only a narrowed one counts rows.
        if !narrow.is_empty() {
            total = store
                .inbox_narrowed_count(&admitted, &principal.tenant, &principal.id, &narrow)
                .await? as usize;
        }
        let page = filter.page.clamp(1, total.div_ceil(INBOX_PAGE_SIZE).max(1));
        let query = PageQuery {
            tenant: &principal.tenant,
            me: &principal.id,
            narrow: &narrow,
            sort: filter.sort,
            limit: INBOX_PAGE_SIZE as i64,
            offset: ((page - 1) * INBOX_PAGE_SIZE) as i64,
        };
        let rows = store.inbox_page(&admitted, &query).await?;
        let pages = total.div_ceil(INBOX_PAGE_SIZE).max(1);
        let page = filter.page.clamp(1, pages);
        let slice = rows;

        // Votes of the page's approvals, in one query.
        let approval_ids: Vec<&str> = slice
            .iter()
            .filter(|(r, _)| r.kind == InterruptKind::Approval)
            .map(|(r, _)| r.interrupt_id.as_str())
            .collect();
        let mut votes: HashMap<String, Vec<Ballot>> = HashMap::new();
        for v in store.counted_votes(&approval_ids).await? {
            votes.entry(v.interrupt_id).or_default().push(Ballot {
                approves: approved_data(v.action, &v.resume_value, v.original.as_ref()),
                principal: v.principal,
                action: v.action,
                is_override: false,
            });
        }

        // What each row asks, summarised in one line (one query per page).
        let ids: Vec<&str> = slice.iter().map(|(r, _)| r.interrupt_id.as_str()).collect();
        let summaries: HashMap<String, Value> = store.summary_payloads(&ids).await?.into_iter().collect();

        let items = slice
            .into_iter()
            .map(|(row, via)| {
                let (accepts, required, my_vote) = if row.kind == InterruptKind::Approval {
                    let rules: ApprovalRules = serde_json::from_str(&row.eligibility)
                        .map_err(|e| EngineError::Storage(format!("interrupts.eligibility: {e}")))?;
                    let v = votes.get(&row.interrupt_id).cloned().unwrap_or_default();
                    let accepts = agreeing_approvals(&v);
                    let mine = v.iter().find(|b| b.principal == principal.id).map(|b| b.action);
                    (Some(accepts), Some(rules.required_approvals), mine)
                } else {
                    (None, None, None)
                };
                Ok(InboxItem {
                    deadline_state: deadline_state(row.deadline_at, now),
                    deadline: row.deadline_at.map(rfc3339),
                    deadline_in_ms: row.deadline_at.map(|d| d - now),
                    age_ms: (now - row.created_at).max(0),
                    created_at: rfc3339(row.created_at),
                    run_id: row.run_id,
                    node_id: row.node_id,
                    kind: row.kind,
                    summary: summaries
                        .get(&row.interrupt_id)
                        .and_then(|p| crate::present::summary(row.kind, p, &row.title)),
                    title: row.title,
                    workflow_id: row.workflow_id,
                    eligible_via: via,
                    accepts,
                    required_approvals: required,
                    my_vote,
                })
            })
            .collect::<Result<_>>()?;
        Ok(InboxPage {
            items,
            total,
            page,
            pages,
            workflows,
            kinds,
            on_behalf_of: (principal.id != viewer.id).then(|| Voter {
                id: principal.id.clone(),
                name: principal.name.clone(),
                eligible_via: String::new(),
            }),
            delegated,
        })
    }

    /// "Approve / Reject selected": `action` (`accept` or `reject`) on each
    /// pick ([`tollgate_wire::inbox::pick_value`]), each one ordinary resolve
    /// with `{"action": …}` and nothing else, so eligibility, self-approval,
    /// quorum by distinct people and the resume schema hold as for one
    /// decision (a gate that needs an answer is refused by its schema).
    /// A pick listed twice is decided once. One result per distinct pick, in
    /// order; the call itself fails (400) only for an unknown `action`, no
    /// `pick` or more than [`BULK_MAX_PICKS`].
    pub async fn decide_many(
        &self,
        actor: &Actor,
        action: &str,
        picks: &[String],
    ) -> Result<Vec<BulkResult>> {
        let action = match ApprovalAction::parse(action) {
            Some(a @ (ApprovalAction::Accept | ApprovalAction::Reject)) => a,
            _ => {
                return Err(EngineError::validation(
                    "action",
                    format!("action: {action:?} is not one of accept, reject"),
                ))
            }
        };
        // First occurrence order; a set, so a post of many repeats stays
        // linear. Picks are told apart by what they name, not how they are
        // spelled (`~2F` and `~2f` are the same run), so none is decided twice.
        let mut seen = HashSet::with_capacity(picks.len());
        let distinct: Vec<&str> = picks
            .iter()
            .map(String::as_str)
            .filter(|p| seen.insert(pick_identity(p)))
            .collect();
        if distinct.is_empty() {
            return Err(EngineError::validation(
                "pick",
                "pick: choose at least one request",
            ));
        }
        if distinct.len() > BULK_MAX_PICKS {
            return Err(EngineError::validation(
                "pick",
                format!("pick: at most {BULK_MAX_PICKS} requests at once"),
            ));
        }
        let mut out = Vec::with_capacity(distinct.len());
        for pick in distinct {
            let (title, result) = self.decide_pick(actor, action, pick).await;
            let (decided, message) = match result {
                Ok(m) => (true, m),
                Err(m) => (false, m),
            };
            out.push(BulkResult {
                pick: pick.to_string(),
                title,
                decided,
                message,
            });
        }
        Ok(out)
    }

    /// One pick of [`Engine::decide_many`]: the title when the person may
    /// see it, and what happened or why not.
    async fn decide_pick(
        &self,
        actor: &Actor,
        action: ApprovalAction,
        pick: &str,
    ) -> (Option<String>, std::result::Result<String, String>) {
        let Some((run, node)) = tollgate_wire::inbox::split_pick(pick) else {
            return (None, Err("not a request of this inbox".into()));
        };
        let run_id = match crate::ids::parse_run_id(run) {
            Ok(r) => r,
            Err(_) => return (None, Err("not a request of this inbox".into())),
        };
        // The same read check as the request's page: another tenant's run says nothing about itself.
        let view = match self.inspect_interrupt(&run_id, node, actor).await {
            Ok(v) => v,
            Err(e) => return (None, Err(e.to_string())),
        };
        let title = Some(view.title.clone());
        if view.kind != InterruptKind::Approval {
            return (
                title,
                Err("only approvals are decided together: open it to answer".into()),
            );
        }
        let resolved = self
            .resolve(
                &run_id,
                node,
                serde_json::json!({ "action": action }),
                actor,
                None,
            )
            .await
            .and_then(|o| o.result);
        let said = match resolved {
            Ok(r) if r.status.is_terminal() => Ok(format!("Decided; the run is now {}.", r.status)),
            Ok(r) => Ok(format!("Your vote was recorded; the run is {}.", r.status)),
            Err(e @ EngineError::Validation { .. }) => {
                Err(format!("this request needs an answer: open it to decide ({e})"))
            }
            Err(e) => Err(e.to_string()),
        };
        (title, said)
    }

    /// Whether a committed change to `run_id` (a notice of [`Engine::subscribe`])
    /// can change `principal`'s inbox: the run is in their tenant and has an
    /// interrupt, pending or past, that they may decide by the same rules as
    /// [`Engine::pending_for`] — for themselves, or for someone who handed
    /// them their decisions. A past one counts because resolving or
    /// cancelling it takes it out of the inbox.
    pub async fn inbox_concerns(&self, principal: &Principal, run_id: &RunId) -> Result<bool> {
        if crate::ids::tenant_of(run_id) != principal.tenant {
            return Ok(false);
        }
        let rows = self.inner.store.rules_of_run(run_id).await?;
        if rows.is_empty() {
            return Ok(false);
        }
        let principal = self
            .principal(&principal.id)
            .await?
            .unwrap_or_else(|| principal.clone());
        for (kind, rules, owner) in &rows {
            if eligible(*kind, rules, &[owner], &principal, true).is_ok() {
                return Ok(true);
            }
        }
        // Decisions handed to this person are on their pages too: an
        // interrupt of this run reassigned to them, or one a delegator may decide.
        let now = self.now();
        for d in self
            .inner
            .store
            .delegations_to(&principal.tenant, &principal.id, now)
            .await?
        {
            if d.interrupt_id.is_some() {
                if d.run_id.as_deref() == Some(run_id.as_str()) {
                    return Ok(true);
                }
                continue;
            }
            let Some(delegator) = self.principal(&d.delegator).await? else {
                continue;
            };
            let theirs = |(kind, rules, owner): &(InterruptKind, String, String)| {
                *owner != principal.id && eligible(*kind, rules, &[owner], &delegator, true).is_ok()
            };
            if delegator.tenant == principal.tenant && rows.iter().any(theirs) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether `actor` may decide the latest interrupt at `node_id`: how the
    /// rules admit them (in whose seat), or the reason they may not.
    pub async fn may_decide(
        &self,
        run_id: &RunId,
        node_id: &str,
        actor: &Actor,
    ) -> Result<std::result::Result<Admission, String>> {
        let view = self.inspect_interrupt(run_id, node_id, actor).await?;
        if view.status != InterruptStatus::Pending {
            return Ok(Err(format!("this interrupt is {}", view.status)));
        }
        let principal = self
            .principal(&actor.principal.id)
            .await?
            .unwrap_or_else(|| actor.principal.clone());
        let (eligibility, _) = self.stored_rules(&view.interrupt_id).await?;
        let requesters = self.requesters_of(run_id).await?;
        let holds = actor.allows(crate::auth::Scope::ApprovalsRespond);
        // Their own seat first: delegations are read only for someone the rules do not admit.
        let own = eligible(view.kind, &eligibility, &requesters, &principal, holds);
        if own.is_ok() || view.kind != InterruptKind::Approval || !holds {
            return Ok(own
                .map(|via| Admission {
                    via,
                    on_behalf_of: None,
                })
                .map_err(|e| e.to_string()));
        }
        // The same seat rule as the resolve (`delegation::seat`), delegations read now.
        let rules: ApprovalRules = serde_json::from_str(&eligibility)
            .map_err(|e| EngineError::Storage(format!("interrupts.eligibility: {e}")))?;
        let delegators = self.delegators_for(&principal, &view.interrupt_id).await?;
        Ok(
            match crate::delegation::seat(
                &rules,
                &principal,
                &requesters,
                holds,
                || Ok(delegators.clone()),
                |holder| {
                    view.votes
                        .iter()
                        .any(|v| v.counted && v.principal == holder && v.cast_by.is_none())
                },
            ) {
                Ok(seat) => Ok(Admission {
                    on_behalf_of: seat.cast_by.and_then(|_| {
                        delegators.iter().find(|d| d.id == seat.holder).map(|d| Voter {
                            id: d.id.clone(),
                            name: d.name.clone(),
                            eligible_via: seat.via.clone(),
                        })
                    }),
                    via: seat.via,
                }),
                Err(e) => Err(e.to_string()),
            },
        )
    }

    /// The people whose seat `principal` may take on `interrupt_id` now, in
    /// the order the resolve tries them.
    pub(super) async fn delegators_for(
        &self,
        principal: &Principal,
        interrupt_id: &str,
    ) -> Result<Vec<Principal>> {
        let live = self
            .inner
            .store
            .delegations_to(&principal.tenant, &principal.id, self.now())
            .await?;
        let mut out = Vec::new();
        for d in live {
            if d.interrupt_id.as_deref().is_some_and(|i| i != interrupt_id) {
                continue;
            }
            if let Some(p) = self
                .principal(&d.delegator)
                .await?
                .filter(|p| p.tenant == principal.tenant)
            {
                out.push(p);
            }
        }
        Ok(out)
    }

    /// The people of the run's tenant who may vote on a pending approval and
    /// have no counted vote yet, by name. Read in two statements whatever
    /// the tenant's size: its principals, and their live keys.
    pub async fn may_still_vote(&self, run_id: &RunId, node_id: &str, actor: &Actor) -> Result<Vec<Voter>> {
        let view = self.inspect_interrupt(run_id, node_id, actor).await?;
        if view.status != InterruptStatus::Pending || view.kind != InterruptKind::Approval {
            return Ok(vec![]);
        }
        let (eligibility, _) = self.stored_rules(&view.interrupt_id).await?;
        let rules: ApprovalRules = serde_json::from_str(&eligibility)
            .map_err(|e| EngineError::Storage(format!("interrupts.eligibility: {e}")))?;
        let requesters = self.requesters_of(run_id).await?;
        let store = &self.inner.store;
        let keys = store.tenant_live_keys(actor.tenant()).await?;
        let mut out = Vec::new();
        for (p, is_person) in store.tenant_people(actor.tenant()).await? {
            if view.votes.iter().any(|v| v.counted && v.principal == p.id) {
                continue;
            }
            let live = keys.get(&p.id).map(Vec::as_slice).unwrap_or_default();
            let holds = super::tokens::respond_held(is_person, live);
            // `admits` first: the same rule, without a text for each refused.
            if !(holds && rules.admits(&p, &requesters, holds)) {
                continue;
            }
            if let Ok(via) = eligible_by(view.kind, Some(&rules), &requesters, &p, holds) {
                out.push(Voter {
                    id: p.id,
                    name: p.name,
                    eligible_via: via,
                });
            }
        }
        Ok(out)
    }

    /// Whose request the run is: its owner, and the person it is for.
    /// The interrupt `interrupt_id` while it is pending; `NotFound` after.
    pub(super) async fn pending_interrupt(&self, interrupt_id: &str) -> Result<crate::runtime::InterruptRow> {
        self.inner
            .store
            .interrupt(interrupt_id, true)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("no pending interrupt {interrupt_id}")))
    }

    pub(super) async fn requesters_of(&self, run_id: &str) -> Result<Vec<String>> {
        let run = self
            .inner
            .store
            .run(run_id)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("no run {run_id}")))?;
        Ok(run.requesters())
    }

    pub(super) async fn stored_rules(&self, interrupt_id: &str) -> Result<(String, String)> {
        self.inner
            .store
            .rules_of(interrupt_id)
            .await?
            .ok_or_else(|| EngineError::NotFound("no such interrupt".into()))
    }
}

/// What a pick names: (run, node) when it parses, else the pick as given.
fn pick_identity(pick: &str) -> (String, String) {
    tollgate_wire::inbox::split_pick(pick)
        .and_then(|(run, node)| Some((crate::ids::parse_run_id(run).ok()?.to_string(), node.to_string())))
        .unwrap_or_else(|| (pick.to_string(), String::new()))
}
