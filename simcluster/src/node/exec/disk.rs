//! The files a command can read: a container's disk as entries with modes and contents.

use std::collections::BTreeMap;

use super::mounts::VolumeData;
use super::volumes::{linux_path, win_path};

// ---------------------------------------------------------------------------------------------
// Disks: the files a command can read
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub(super) struct DiskEntry {
    /// The path as displayed.
    pub(super) path: String,
    /// The content and mode of a file; None for a directory.
    pub(super) file: Option<(Vec<u8>, u32)>,
}

impl DiskEntry {
    pub(super) fn name(&self) -> &str {
        self.path.rsplit(['/', '\\']).next().unwrap_or(&self.path)
    }

    pub(super) fn size(&self) -> usize {
        self.file.as_ref().map_or(0, |(d, _)| d.len())
    }
}

/// A read-only file tree (case-insensitive on Windows).
#[derive(Debug, Clone)]
pub(super) struct Disk {
    pub(super) windows: bool,
    pub(super) entries: BTreeMap<String, DiskEntry>,
}

impl Disk {
    pub(super) fn new(windows: bool) -> Self {
        let mut disk = Self {
            windows,
            entries: BTreeMap::new(),
        };
        disk.add_dir(if windows { "C:\\" } else { "/" });
        disk
    }

    pub(super) fn sep(&self) -> char {
        if self.windows { '\\' } else { '/' }
    }

    pub(super) fn key(&self, path: &str) -> String {
        if self.windows {
            path.to_lowercase()
        } else {
            path.to_string()
        }
    }

    pub(super) fn normalize(&self, path: &str, cwd: &str) -> String {
        if self.windows {
            win_path(path, cwd)
        } else {
            linux_path(path, cwd)
        }
    }

    pub(super) fn parent(&self, path: &str) -> Option<String> {
        let (head, _) = path.rsplit_once(self.sep())?;
        let root = head.is_empty() || (self.windows && head.len() == 2 && head.ends_with(':'));
        match (root, path.len() == head.len() + 1) {
            (true, true) => None,
            (true, false) => Some(format!("{head}{}", self.sep())),
            (false, _) => Some(head.to_string()),
        }
    }

    pub(super) fn add_dir(&mut self, path: &str) {
        let mut at = Some(path.to_string());
        while let Some(dir) = at {
            let key = self.key(&dir);
            if self.entries.contains_key(&key) {
                break;
            }
            at = self.parent(&dir);
            self.entries.insert(key, DiskEntry { path: dir, file: None });
        }
    }

    pub(super) fn add_file(&mut self, path: &str, data: Vec<u8>, mode: u32) {
        if let Some(parent) = self.parent(path) {
            self.add_dir(&parent);
        }
        self.entries.insert(
            self.key(path),
            DiskEntry {
                path: path.to_string(),
                file: Some((data, mode)),
            },
        );
    }

    pub(super) fn get(&self, path: &str) -> Option<&DiskEntry> {
        self.entries.get(&self.key(path))
    }

    /// The entries directly in `dir`, by name.
    pub(super) fn children(&self, dir: &str) -> Vec<&DiskEntry> {
        self.descendants(dir)
            .into_iter()
            .filter(|e| self.parent(&e.path).is_some_and(|p| self.key(&p) == self.key(dir)))
            .collect()
    }

    /// Everything under `dir`, depth first.
    pub(super) fn descendants(&self, dir: &str) -> Vec<&DiskEntry> {
        let mut prefix = self.key(dir);
        if !prefix.ends_with(self.sep()) {
            prefix.push(self.sep());
        }
        self.entries
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter(|(k, _)| k.len() > prefix.len())
            .map(|(_, e)| e)
            .collect()
    }

    pub(super) fn join(&self, dir: &str, rel: &str) -> String {
        let rel = if self.windows {
            rel.replace('/', "\\")
        } else {
            rel.to_string()
        };
        let joined = format!("{}{}{rel}", dir.trim_end_matches(self.sep()), self.sep());
        self.normalize(&joined, dir)
    }

    /// Places a volume's files at `at` (a `subPath` mounts one file or directory of it).
    pub(super) fn mount(&mut self, at: &str, data: &VolumeData, sub_path: &str) {
        self.add_dir(at);
        let sub = sub_path.trim_matches('/');
        for (rel, content, mode) in &data.files {
            let target = if sub.is_empty() {
                Some(self.join(at, rel))
            } else if rel == sub {
                self.entries.remove(&self.key(at));
                Some(at.to_string())
            } else {
                rel.strip_prefix(&format!("{sub}/")).map(|r| self.join(at, r))
            };
            if let Some(target) = target {
                self.add_file(&target, content.clone(), *mode);
            }
        }
    }
}
