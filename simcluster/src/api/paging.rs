//! List chunking: `limit` and `continue` on a list, as kube-apiserver serves them (API
//! conventions, "Retrieving large results sets in chunks"; kubectl asks `limit=500`): a list
//! longer than `limit` answers its first `limit` items with `metadata.continue` and
//! `metadata.remainingItemCount`, and each `continue` the next ones of the same list at the same
//! resourceVersion. A continue token lives as long as etcd keeps the revision it reads at
//! (kube-apiserver compacts every five minutes, `--etcd-compaction-interval`); after that, or
//! for a token the server never gave, the answer is 410 Expired and the client starts again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::store::Obj;
use crate::store::api_error::ApiError;

/// How long a continue token stays valid (kube-apiserver's default compaction interval).
const TOKEN_LIFE: Duration = Duration::from_secs(5 * 60);

/// The lists being read in chunks: each one's items as they were at its first chunk.
#[derive(Debug, Default)]
pub struct Pages {
    lists: Mutex<HashMap<u64, Snapshot>>,
    next: AtomicU64,
}

#[derive(Debug)]
struct Snapshot {
    items: std::sync::Arc<Vec<Obj>>,
    rv: u64,
    taken: Instant,
}

/// One chunk of a list: its items, the list's resourceVersion, and where the rest is.
#[derive(Debug)]
pub struct Page {
    pub items: Vec<Obj>,
    pub rv: u64,
    /// The token for the next chunk, and how many items are after this one.
    pub rest: Option<(String, usize)>,
}

/// The `limit` of a list: None for none (absent, 0 or negative, as the apiserver reads it),
/// 400 for a value that is not a number.
pub fn limit(value: Option<&str>) -> Result<Option<usize>, ApiError> {
    match value {
        None | Some("") => Ok(None),
        Some(v) => v
            .parse::<i64>()
            .map(|n| usize::try_from(n).ok().filter(|n| *n > 0))
            .map_err(|_| {
                ApiError::BadRequest(format!(
                    "limit: invalid value {v:?}: strconv.ParseInt: parsing {v:?}: invalid syntax"
                ))
            }),
    }
}

impl Pages {
    /// The first chunk of `items` (the whole list, at `rv`) of at most `limit` items.
    pub fn first(&self, items: Vec<Obj>, rv: u64, limit: Option<usize>) -> Page {
        match limit {
            Some(limit) if items.len() > limit => {
                let id = self.next.fetch_add(1, Ordering::Relaxed);
                let items = std::sync::Arc::new(items);
                let page = chunk(&items, 0, limit, rv, id);
                let mut lists = self.lists.lock().unwrap_or_else(|p| p.into_inner());
                lists.retain(|_, s| s.taken.elapsed() < TOKEN_LIFE);
                lists.insert(
                    id,
                    Snapshot {
                        items,
                        rv,
                        taken: Instant::now(),
                    },
                );
                page
            }
            _ => Page { items, rv, rest: None },
        }
    }

    /// The chunk a continue `token` points at, of at most `limit` items (the rest of the list
    /// without one); 410 for a token that expired or that this server never gave, 400 for one
    /// that is not a token.
    pub fn next(&self, token: &str, limit: Option<usize>) -> Result<Page, ApiError> {
        let (id, offset) = parse(token).ok_or_else(|| {
            ApiError::BadRequest(format!("continue key is not valid: {token:?} is not a continue token"))
        })?;
        let mut lists = self.lists.lock().unwrap_or_else(|p| p.into_inner());
        let Some(snapshot) = lists.get(&id).filter(|s| s.taken.elapsed() < TOKEN_LIFE) else {
            lists.remove(&id);
            return Err(ApiError::ContinueExpired);
        };
        let (items, rv) = (snapshot.items.clone(), snapshot.rv);
        let limit = limit.unwrap_or(usize::MAX);
        let page = chunk(&items, offset, limit, rv, id);
        if page.rest.is_none() {
            lists.remove(&id);
        }
        Ok(page)
    }
}

/// `limit` items of `items` from `offset`, with the token of the rest if any.
fn chunk(items: &[Obj], offset: usize, limit: usize, rv: u64, id: u64) -> Page {
    let from = offset.min(items.len());
    let to = from.saturating_add(limit).min(items.len());
    let rest = (to < items.len()).then(|| (format!("mc-{id}-{to}"), items.len() - to));
    Page {
        items: items[from..to].to_vec(),
        rv,
        rest,
    }
}

fn parse(token: &str) -> Option<(u64, usize)> {
    let mut parts = token.strip_prefix("mc-")?.splitn(2, '-');
    let id = parts.next()?.parse().ok()?;
    let offset = parts.next()?.parse().ok()?;
    Some((id, offset))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Store, resources};
    use serde_json::json;

    fn objects(n: usize) -> (Vec<Obj>, u64) {
        let store = Store::default();
        for i in 0..n {
            store
                .create(
                    resources::core("namespaces"),
                    "",
                    json!({"metadata": {"name": format!("ns-{i:02}")}}),
                )
                .expect("namespace");
        }
        store.list(resources::core("namespaces"), None)
    }

    fn names(items: &[Obj]) -> Vec<String> {
        items.iter().map(|o| o.name().to_string()).collect()
    }

    /// Chunks of `limit` cover the list once, in order, at the first chunk's resourceVersion,
    /// each saying how many items are left; a short list comes whole.
    #[rstest::rstest]
    #[case::three_chunks(7, Some(3), vec![3, 3, 1])]
    #[case::exact(6, Some(3), vec![3, 3])]
    #[case::fits(3, Some(3), vec![3])]
    #[case::no_limit(5, None, vec![5])]
    fn chunks_cover_the_list_once(#[case] n: usize, #[case] limit: Option<usize>, #[case] sizes: Vec<usize>) {
        let (items, rv) = objects(n);
        let all = names(&items);
        let pages = Pages::default();
        let mut page = pages.first(items, rv, limit);
        let mut seen = Vec::new();
        let mut got = Vec::new();
        loop {
            got.push(page.items.len());
            seen.extend(names(&page.items));
            assert_eq!(page.rv, rv);
            let Some((token, left)) = page.rest.clone() else { break };
            assert_eq!(left, n - seen.len());
            page = pages.next(&token, limit).expect("next chunk");
        }
        assert_eq!(got, sizes);
        assert_eq!(seen, all);
        assert!(
            pages.lists.lock().expect("lock").is_empty(),
            "a list read to its end is forgotten"
        );
    }

    #[test]
    fn unknown_and_malformed_tokens_are_refused() {
        let pages = Pages::default();
        assert!(matches!(pages.next("mc-9-3", Some(2)), Err(ApiError::ContinueExpired)));
        assert!(matches!(
            pages.next("not-a-token", Some(2)),
            Err(ApiError::BadRequest(_))
        ));
        assert!(matches!(limit(Some("x")), Err(ApiError::BadRequest(_))));
        assert_eq!(limit(Some("-1")).expect("negative"), None);
        assert_eq!(limit(Some("0")).expect("zero"), None);
        assert_eq!(limit(Some("500")).expect("number"), Some(500));
    }
}
