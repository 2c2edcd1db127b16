//! What every catalogue document shares: the schema version, the error a malformed one gives
//! (file, line and column) and the parser that reports it.

/// The schema version every suite, cause and remedy document declares.
pub const API_VERSION: &str = "mixcheck/v1";

/// A problem with a suite or fixture file (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("{path}: cannot read: {cause}")]
    Read { path: String, cause: std::io::Error },
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        path: String,
        line: u64,
        column: u64,
        message: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or(s).to_string()
}

/// One YAML document of the catalogue (a suite, the causes, the remedies); a syntax or schema
/// error names `origin`, line and column.
pub fn from_yaml<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T, SuiteError> {
    serde_saphyr::from_str(text).map_err(|e| {
        let (line, column) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
        SuiteError::Parse {
            path: origin.to_string(),
            line,
            column,
            message: first_line(&e.to_string()),
        }
    })
}
