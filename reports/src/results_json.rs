//! `results.json`: the [`RunReport`] as a file — written atomically ([`write()`]) and read back
//! ([`read()`], for `mixcheck diff` and for re-rendering) with errors that name the file and the
//! position.

use std::{
    fs, io,
    io::Write as _,
    path::{Path, PathBuf},
};

use serde::Deserialize;

use crate::report::{RunReport, SCHEMA_VERSION};

/// The file name inside the report directory.
pub const FILE_NAME: &str = "results.json";

/// A failure to write or read `results.json`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The report directory could not be created.
    #[error("cannot create the report directory {}", .dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The report could not be turned into JSON.
    #[error("cannot serialise the run report")]
    Serialize(#[source] serde_json::Error),
    /// The file (or its temporary sibling) could not be written or put in place.
    #[error("cannot write {}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A report format could not be rendered.
    #[error("cannot render the {format} report: {message}")]
    Render {
        /// The format.
        format: &'static str,
        /// Why.
        message: String,
    },
    /// The file could not be read.
    #[error("cannot read {}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The file is not valid JSON (or ends early).
    #[error("{}:{line}:{column}: not valid JSON", .path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// The parser's message.
        #[source]
        source: serde_json::Error,
    },
    /// The file is JSON, but not a run report (a field missing or of the wrong type).
    #[error("{}:{line}:{column}: not a mixcheck results file", .path.display())]
    Content {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// The parser's message.
        #[source]
        source: serde_json::Error,
    },
    /// The file was written with a schema this version does not read.
    #[error(
        "{} has results schema version {found}; this mixcheck reads versions 1 to {SCHEMA_VERSION}",
        .path.display()
    )]
    UnsupportedSchema {
        /// The file.
        path: PathBuf,
        /// Its `schema_version`.
        found: u32,
    },
}

/// Writes `report` as `dir/results.json` (pretty-printed) and returns that path.
///
/// Creates `dir` if needed. The JSON goes to a temporary file in `dir` that is synced and then
/// renamed over `results.json`, so a reader — or a CI step collecting artifacts after a crash —
/// sees the previous file or the new one, never a part of one. On failure the temporary file is
/// removed.
///
/// # Errors
///
/// [`Error::CreateDir`], [`Error::Serialize`] or [`Error::Write`].
pub fn write(report: &RunReport, dir: &Path) -> Result<PathBuf, Error> {
    let mut json = serde_json::to_vec_pretty(report).map_err(Error::Serialize)?;
    json.push(b'\n');
    write_atomically(dir, FILE_NAME, &json)
}

/// Writes `bytes` to `dir/name` through a temporary sibling that is synced and renamed into
/// place, so a reader never sees half a file (creating `dir` first).
pub(crate) fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, Error> {
    fs::create_dir_all(dir).map_err(|source| Error::CreateDir {
        dir: dir.to_owned(),
        source,
    })?;
    let path = dir.join(name);
    let write_error = |source| Error::Write {
        path: path.clone(),
        source,
    };

    let mut builder = tempfile::Builder::new();
    let prefix = format!(".{name}.");
    builder.prefix(&prefix).suffix(".tmp");
    // tempfile creates 0600 files; a report is no secret, and CI artifact steps may run as
    // another user. The umask still applies.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    let mut tmp = builder.tempfile_in(dir).map_err(write_error)?;
    tmp.write_all(bytes).map_err(write_error)?;
    tmp.as_file().sync_all().map_err(write_error)?;
    // On error the returned temporary file is dropped, which deletes it.
    tmp.persist(&path).map_err(|e| write_error(e.error))?;
    Ok(path)
}

/// Just enough of a report to check its schema before reading the rest.
#[derive(Deserialize)]
struct Header {
    schema_version: Option<u32>,
}

/// Reads a `results.json` written by [`write()`] (of this or an older schema version).
///
/// # Errors
///
/// [`Error::Read`] when the file cannot be read, [`Error::Syntax`] (with line and column) when
/// it is not JSON, [`Error::UnsupportedSchema`] when a newer mixcheck wrote it, and
/// [`Error::Content`] (with line and column) when it is JSON but not a run report.
pub fn read(path: &Path) -> Result<RunReport, Error> {
    let text = fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(&text, path)
}

/// Parses the text of a results.json that came from elsewhere (a Job's log); `path` names its
/// origin in errors. The same checks as [`read`].
///
/// # Errors
///
/// As [`read`], except [`Error::Read`].
pub fn parse(text: &str, path: &Path) -> Result<RunReport, Error> {
    let text = text.to_owned();
    let header: Header = serde_json::from_str(&text).map_err(|e| parse_error(path, e))?;
    if let Some(found) = header.schema_version
        && !(1..=SCHEMA_VERSION).contains(&found)
    {
        return Err(Error::UnsupportedSchema {
            path: path.to_owned(),
            found,
        });
    }
    let report: RunReport = serde_json::from_str(&text).map_err(|e| parse_error(path, e))?;
    // A saved file is input like any other: what it says is printed to terminals and put into
    // XML, so escape sequences and control characters go, whoever wrote them.
    let mut value = serde_json::to_value(&report).map_err(|e| parse_error(path, e))?;
    printable_strings(&mut value);
    serde_json::from_value(value).map_err(|e| parse_error(path, e))
}

/// Every string in a JSON value, cleaned of escape sequences and control characters.
fn printable_strings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(s) => {
            let unprintable =
                |c: char| (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{fffe}' | '\u{ffff}');
            if s.chars().any(unprintable) {
                *s = crate::evidence::printable(s);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(printable_strings),
        serde_json::Value::Object(fields) => fields.values_mut().for_each(printable_strings),
        _ => {}
    }
}

fn parse_error(path: &Path, source: serde_json::Error) -> Error {
    let (path, line, column) = (path.to_owned(), source.line(), source.column());
    match source.classify() {
        serde_json::error::Category::Data => Error::Content {
            path,
            line,
            column,
            source,
        },
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof | serde_json::error::Category::Io => {
            Error::Syntax {
                path,
                line,
                column,
                source,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use rstest::rstest;
    use serde_json::Value;

    use super::*;
    use crate::testdata::sample_report;
    use crate::{Cause, Diagnosis, NodeEvidence, Observed};

    fn schema() -> Value {
        serde_json::from_str(include_str!("../schema/results.schema.json")).expect("the schema is JSON")
    }

    /// The keys of a serialised object, sorted.
    fn keys(value: &Value) -> Vec<String> {
        let mut keys: Vec<String> = value.as_object().expect("an object").keys().cloned().collect();
        keys.sort();
        keys
    }

    /// A schema object's `properties` names, or its `required` names, sorted.
    fn schema_names(schema: &Value, object: &str, which: &str) -> Vec<String> {
        let at = schema
            .pointer(object)
            .unwrap_or_else(|| panic!("{object} in the schema"));
        let mut names: Vec<String> = match which {
            "properties" => at["properties"]
                .as_object()
                .expect("properties")
                .keys()
                .cloned()
                .collect(),
            _ => at[which]
                .as_array()
                .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                .unwrap_or_default(),
        };
        names.sort();
        names
    }

    fn json(value: impl serde::Serialize) -> Value {
        serde_json::to_value(value).expect("serialise")
    }

    fn sample_diagnosis() -> Diagnosis {
        sample_report().diagnosis.expect("the sample report is diagnosed")
    }

    /// A cause with every optional part left empty.
    fn bare_cause() -> Cause {
        Cause {
            rule_id: None,
            contradicted_by: Vec::new(),
            evidence: Vec::new(),
            confirm: Vec::new(),
            sources: Vec::new(),
            ..sample_diagnosis().causes[0].clone()
        }
    }

    /// The objects of the diagnosis (and the node references cells gained) list exactly the
    /// fields serde writes: `properties` those of a value with every part filled, `required`
    /// those of a value with every optional part empty (serde's `skip_serializing_if`).
    #[rstest]
    #[case::diagnosis("/$defs/diagnosis", json(sample_diagnosis()), json(Diagnosis::default()))]
    #[case::cause("/$defs/cause", json(&sample_diagnosis().causes[0]), json(bare_cause()))]
    #[case::node_evidence(
        "/$defs/nodeEvidence",
        json(&sample_diagnosis().evidence[0]),
        json(NodeEvidence { node: "n".into(), items: Vec::new() })
    )]
    #[case::evidence_item(
        "/$defs/nodeEvidence/properties/items/items",
        json(&sample_diagnosis().evidence[0].items[0]),
        json(&sample_diagnosis().evidence[0].items[0])
    )]
    #[case::node_ref("/$defs/nodeRef", json(&sample_report().cells[0].nodes[0]), json(&sample_report().cells[0].nodes[1]))]
    #[case::images(
        "/properties/images",
        json(sample_report().images),
        json(crate::Images::default())
    )]
    #[case::observed(
        "/$defs/cell/properties/observed",
        json(&sample_report().cells[0].observed),
        json(Observed::default())
    )]
    fn the_schema_lists_the_fields_serde_writes(#[case] object: &str, #[case] full: Value, #[case] bare: Value) {
        let schema = schema();
        assert_eq!(
            schema_names(&schema, object, "properties"),
            keys(&full),
            "{object} properties"
        );
        assert_eq!(
            schema_names(&schema, object, "required"),
            keys(&bare),
            "{object} required"
        );
        assert_eq!(
            schema.pointer(object).and_then(|o| o.get("additionalProperties")),
            Some(&Value::Bool(false)),
            "{object} refuses unknown fields"
        );
    }

    #[test]
    fn the_schema_has_the_diagnosis_and_the_nodes_a_cell_was_observed_on() {
        let schema = schema();
        assert_eq!(schema["properties"]["diagnosis"]["$ref"], "#/$defs/diagnosis");
        let top_required = schema_names(&schema, "", "required");
        assert!(
            !top_required.contains(&"diagnosis".to_string()),
            "diagnosis is optional"
        );
        assert_eq!(
            schema["$defs"]["cell"]["properties"]["observed"]["properties"]["on"]["items"],
            schema["$defs"]["cell"]["properties"]["nodes"]["items"],
            "observed.on holds node references like nodes"
        );
        assert_eq!(schema["$defs"]["cause"]["properties"]["confidence"]["maximum"], 100);
    }

    #[test]
    fn a_diagnosis_round_trips() {
        let dir = tempfile::tempdir().expect("tempdir");
        let report = sample_report();
        let diagnosis = report.diagnosis.clone().expect("diagnosed");
        assert!(!diagnosis.causes.is_empty() && !diagnosis.unexplained.is_empty() && !diagnosis.evidence.is_empty());
        let back = read(&write(&report, dir.path()).expect("write")).expect("read");
        assert_eq!(back.diagnosis, Some(diagnosis));
        assert_eq!(back.cells[0].observed.on, report.cells[0].observed.on);
        assert_eq!(back.cells[0].observed.on.len(), 2);
    }

    #[test]
    fn a_report_without_a_diagnosis_has_no_diagnosis_field() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut report = sample_report();
        report.diagnosis = None;
        report.cells[0].observed.on.clear();
        let value = json(&report);
        assert!(value.get("diagnosis").is_none());
        assert!(value["cells"][0]["observed"].get("on").is_none());
        let back = read(&write(&report, dir.path()).expect("write")).expect("read");
        assert_eq!(back, report);
    }

    #[test]
    fn diagnosis_text_read_back_is_printable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut report = sample_report();
        let d = report.diagnosis.as_mut().expect("diagnosed");
        d.causes[0].title = "title \u{1b}[31mred\u{1b}[0m".into();
        d.causes[0].evidence[0] = "bell \u{7}here".into();
        let back = read(&write(&report, dir.path()).expect("write")).expect("read");
        let d = back.diagnosis.expect("diagnosed");
        assert_eq!(d.causes[0].title, "title red");
        assert_eq!(d.causes[0].evidence[0], "bell here");
    }

    /// The schema file lists exactly the verdicts and expectations the model has.
    #[test]
    fn the_schema_file_names_every_verdict_and_expectation() {
        let schema = schema();
        let names = |ptr: &str| -> Vec<String> {
            let mut v: Vec<String> = schema
                .pointer(ptr)
                .and_then(serde_json::Value::as_array)
                .expect(ptr)
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect();
            v.sort();
            v
        };
        let mut verdicts: Vec<String> = crate::Verdict::ALL.iter().map(|v| v.as_str().to_string()).collect();
        verdicts.sort();
        assert_eq!(names("/$defs/verdict/enum"), verdicts);
        let mut expected: Vec<String> = crate::Expected::ALL.iter().map(|e| e.as_str().to_string()).collect();
        expected.sort();
        assert_eq!(names("/$defs/cell/properties/expected/properties/kind/enum"), expected);
        assert_eq!(
            schema
                .pointer("/properties/schema_version/const")
                .and_then(serde_json::Value::as_u64),
            Some(u64::from(crate::SCHEMA_VERSION))
        );
    }

    #[test]
    fn round_trip_of_a_full_report() {
        let dir = tempfile::tempdir().expect("tempdir");
        let report = sample_report();
        let path = write(&report, dir.path()).expect("write");
        assert_eq!(path, dir.path().join("results.json"));
        let back = read(&path).expect("read");
        assert_eq!(back, report);
        // The file is the serialised report, pretty-printed with a final newline.
        let text = fs::read_to_string(&path).expect("read text");
        assert!(text.ends_with("}\n"));
        let again = serde_json::to_string_pretty(&back).expect("serialise") + "\n";
        assert_eq!(text, again);
    }

    #[test]
    fn json_shape_is_the_documented_one() {
        let value = serde_json::to_value(sample_report()).expect("serialise");
        assert_eq!(value["schema_version"], 1);
        assert_eq!(value["started_at"], "2026-11-21T10:00:00Z");
        assert_eq!(value["target"]["kind"], "kubeconfig");
        assert_eq!(
            value["facts"]["network_mode"],
            serde_json::json!({"value": "overlay", "source": "kube-flannel/kube-flannel-cfg net-conf.json"})
        );
        assert_eq!(value["facts"]["nodes"]["win2022-1"]["windows_build"]["value"], 20348);
        let cell = &value["cells"][0];
        assert_eq!(
            cell["id"],
            "net/NET-POD-POD-IP-CROSS[windows-20348→linux,other-node,tcp,pod-ip]"
        );
        assert_eq!(cell["verdict"], "fail");
        assert_eq!(cell["expected"]["kind"], "works");
        assert_eq!(cell["coordinates"]["locality"], "other-node");
        assert_eq!(cell["nodes"][0]["role"], "source");
        assert_eq!(cell["observed"]["evidence"]["events"][0]["type"], "Warning");
        // Unknown facts and empty optional parts are left out, not written as null.
        assert!(value["facts"].get("egress").is_none());
        assert!(value["cells"][1].get("remedy").is_none());
        assert!(value.get("aborted").is_none());
    }

    #[test]
    fn an_existing_file_is_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut report = sample_report();
        write(&report, dir.path()).expect("first write");
        report.run_id = "second".into();
        report.cells.truncate(1);
        let path = write(&report, dir.path()).expect("second write");
        assert_eq!(read(&path).expect("read").run_id, "second");
        assert_eq!(names_in(dir.path()), ["results.json"], "no temporary file left");
    }

    #[test]
    fn text_read_back_has_no_escapes_or_control_characters() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut report = sample_report();
        report.cells[0].observed.summary = "red \u{1b}[31mX\u{1b}[0m\u{7}\r\nline \u{fffe}two\tend".into();
        report.cells[0].title = "title \u{1b}]0;pwned\u{7}kept".into();
        let path = write(&report, dir.path()).expect("write");
        let back = read(&path).expect("read");
        assert_eq!(back.cells[0].observed.summary, "red X\nline two\tend");
        assert_eq!(back.cells[0].title, "title kept");
        assert_eq!(back.cells[1..], report.cells[1..], "clean text is untouched");
    }

    #[test]
    fn creates_the_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let nested = dir.path().join("out/run-1");
        let path = write(&sample_report(), &nested).expect("write");
        assert!(path.is_file());
    }

    #[test]
    fn a_failed_write_leaves_no_partial_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A directory where results.json should go: the rename over it fails.
        let blocker = dir.path().join(FILE_NAME);
        fs::create_dir(&blocker).expect("mkdir");
        fs::write(blocker.join("keep"), "old").expect("write");
        let err = write(&sample_report(), dir.path()).expect_err("rename onto a directory fails");
        assert!(matches!(&err, Error::Write { path, .. } if *path == blocker), "{err:?}");
        assert_eq!(names_in(dir.path()), ["results.json"], "the temporary file was removed");
        assert_eq!(fs::read_to_string(blocker.join("keep")).expect("read"), "old");
    }

    #[test]
    fn a_directory_that_cannot_be_created_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("plain-file");
        fs::write(&file, "x").expect("write");
        let err = write(&sample_report(), &file.join("sub")).expect_err("parent is a file");
        assert!(matches!(err, Error::CreateDir { .. }), "{err:?}");
        assert!(err.to_string().contains("plain-file"), "{err}");
    }

    #[test]
    fn syntax_errors_name_file_line_and_column() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("results.json");
        fs::write(&path, "{\n  \"schema_version\": 1,\n  \"run_id\" \"x\"\n}\n").expect("write");
        let err = read(&path).expect_err("invalid JSON");
        assert!(
            matches!(
                err,
                Error::Syntax {
                    line: 3,
                    column: 12,
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(err.to_string(), format!("{}:3:12: not valid JSON", path.display()));
        assert!(err.source().is_some());
    }

    #[test]
    fn a_truncated_file_is_a_syntax_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("results.json");
        let full = serde_json::to_string_pretty(&sample_report()).expect("serialise");
        fs::write(&path, &full[..full.len() / 2]).expect("write");
        assert!(matches!(read(&path), Err(Error::Syntax { .. })));
    }

    #[test]
    fn other_json_is_not_a_results_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("results.json");
        fs::write(&path, "{\"schema_version\": 1, \"tool_version\": 7}").expect("write");
        let err = read(&path).expect_err("wrong type");
        assert!(matches!(err, Error::Content { line: 1, .. }), "{err:?}");
        assert!(err.to_string().contains("not a mixcheck results file"), "{err}");
    }

    #[test]
    fn a_newer_schema_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("results.json");
        fs::write(&path, "{\"schema_version\": 2, \"something\": \"new\"}").expect("write");
        let err = read(&path).expect_err("too new");
        assert!(matches!(err, Error::UnsupportedSchema { found: 2, .. }), "{err:?}");
        assert!(err.to_string().contains("schema version 2"), "{err}");
    }

    #[test]
    fn a_missing_file_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("nope.json");
        let err = read(&path).expect_err("missing");
        assert!(matches!(err, Error::Read { .. }));
        assert!(err.to_string().contains("nope.json"), "{err}");
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}
