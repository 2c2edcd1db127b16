//! `tar`, as `kubectl cp` runs it through exec (`kubectl/pkg/cmd/cp/cp.go`: `tar -xmf - -C DIR`
//! to copy into a container, `tar cf - PATH` to copy out of it): ustar archives on stdin and
//! stdout of the container's files, with busybox's messages. Other archive files than `-` are
//! not simulated.

use std::fmt::Write as _;
use std::io::Read as _;
use std::sync::Arc;

use super::session::{Session, WriteError};
use super::support::out;
use super::{Call, Reply};

enum Mode {
    Extract,
    Create,
}

pub(super) fn tar(s: &Arc<Session>, call: Call) -> Reply {
    let (mut mode, mut file, mut dir, mut paths) = (None, None, None, Vec::new());
    let mut args = call.args().iter().enumerate().peekable();
    while let Some((i, arg)) = args.next() {
        if arg == "-C" {
            dir = args.next().map(|(_, d)| d.clone());
        } else if arg.starts_with("--") {
            // --no-same-permissions, --no-same-owner: nothing to keep in the simulation.
        } else if let Some(letters) = arg.strip_prefix('-').or((i == 0).then_some(arg.as_str())) {
            for c in letters.chars() {
                match c {
                    'x' => mode = Some(Mode::Extract),
                    'c' => mode = Some(Mode::Create),
                    'f' => file = args.next().map(|(_, f)| f.clone()),
                    _ => {}
                }
            }
        } else {
            paths.push(arg.clone());
        }
    }
    if file.as_deref().is_some_and(|f| f != "-") {
        return out("", "tar: only archives on stdin and stdout are simulated\n", 1).into();
    }
    match mode {
        Some(Mode::Extract) => extract(s, &call.stdin, dir.as_deref()),
        Some(Mode::Create) => create(s, &paths, dir.as_deref()),
        None => out("", "tar: need to specify one of -c or -x\n", 1).into(),
    }
}

fn extract(s: &Arc<Session>, archive: &[u8], dir: Option<&str>) -> Reply {
    let base = s.path(dir.unwrap_or("."));
    let mut stderr = String::new();
    let mut entries_of = tar::Archive::new(archive);
    let entries = match entries_of.entries() {
        Ok(e) => e,
        Err(e) => return out("", format!("tar: {e}\n"), 1).into(),
    };
    for entry in entries {
        let mut entry = match entry {
            Ok(e) => e,
            Err(_) => return out("", format!("{stderr}tar: short read\n"), 1).into(),
        };
        let name = entry
            .path()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let mut data = Vec::new();
        if entry.read_to_end(&mut data).is_err() {
            return out("", format!("{stderr}tar: short read\n"), 1).into();
        }
        let target = s.disk().join(&base, &name);
        let problem = match s.write_file(&target, &data, false) {
            Ok(()) => continue,
            Err(WriteError::ReadOnly) => "Read-only file system",
            Err(WriteError::NoDirectory) => "No such file or directory",
            Err(WriteError::IsDirectory) => "Is a directory",
        };
        let _ = writeln!(stderr, "tar: can't open '{name}': {problem}");
    }
    let code = i32::from(!stderr.is_empty());
    out("", stderr, code).into()
}

fn create(s: &Arc<Session>, paths: &[String], dir: Option<&str>) -> Reply {
    let base = s.path(dir.unwrap_or("."));
    let mut builder = tar::Builder::new(Vec::new());
    let mut stderr = String::new();
    let mut stripped = false;
    for p in paths {
        let full = s.disk().join(&base, p);
        let member = p.trim_start_matches('/');
        stripped |= member.len() != p.len();
        let files: Vec<(String, Vec<u8>, u32)> = {
            let disk = s.disk();
            match disk.get(&full) {
                None => {
                    let _ = writeln!(stderr, "tar: {p}: No such file or directory");
                    continue;
                }
                Some(e) => match &e.file {
                    Some((data, mode)) => vec![(member.to_string(), data.clone(), *mode)],
                    None => disk
                        .descendants(&full)
                        .into_iter()
                        .filter_map(|d| {
                            let (data, mode) = d.file.as_ref()?;
                            let rel = d.path.get(full.len()..)?.trim_start_matches(['/', '\\']);
                            Some((format!("{}/{rel}", member.trim_end_matches('/')), data.clone(), *mode))
                        })
                        .collect(),
                },
            }
        };
        for (name, data, mode) in files {
            let mut header = tar::Header::new_ustar();
            header.set_size(data.len() as u64);
            header.set_mode(mode);
            header.set_entry_type(tar::EntryType::Regular);
            if builder.append_data(&mut header, &name, data.as_slice()).is_err() {
                let _ = writeln!(stderr, "tar: {name}: name too long");
            }
        }
    }
    let archive = builder.into_inner().unwrap_or_default();
    if stripped {
        stderr.insert_str(0, "tar: removing leading '/' from member names\n");
    }
    let code = i32::from(stderr.lines().any(|l| !l.contains("removing leading")));
    out(archive, stderr, code).into()
}
