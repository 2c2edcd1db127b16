//! PowerShell's error records as the console prints them — the general record and the
//! CommandNotFoundException of an unknown command — written by the interpreter
//! ([`super::powershell`]) and by the network cmdlets ([`super::nettools`]).

/// A PowerShell error record as the console prints it.
pub(crate) fn ps_error(statement: &str, head: &str, message: &str, category: &str, fqid: &str) -> String {
    let underline = "~".repeat(statement.chars().count().max(1));
    let first = if head.is_empty() {
        message.to_string()
    } else {
        format!("{head} : {message}")
    };
    format!(
        "{first}\r\nAt line:1 char:1\r\n+ {statement}\r\n+ {underline}\r\n    + CategoryInfo          : \
        {category}\r\n    + FullyQualifiedErrorId : {fqid}\r\n \r\n"
    )
}

pub(super) fn ps_not_recognized(statement: &str, name: &str) -> String {
    ps_error(
        statement,
        name,
        &format!(
            "The term '{name}' is not recognized as the name of a cmdlet, function, script file, or operable \
            program. Check the spelling of the name, or if a path was included, verify that the path is correct and \
            try again."
        ),
        &format!("ObjectNotFound: ({name}:String) [], CommandNotFoundException"),
        "CommandNotFoundException",
    )
}
