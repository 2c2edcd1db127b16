//! A cmdlet call: the cmdlet table it is looked up in (each cmdlet's names, parameters,
//! switches and handler), its given arguments bound to an [`Invocation`], their texts, and the
//! errors the call writes ([`Errors`]). The evaluator ([`super::eval`]), the cmdlets' handlers
//! ([`super::cmdlets`], [`super::hostcmdlets`], [`super::system`]) and a container's main process
//! ([`super::walk`]) all call cmdlets through here.

use super::V;

/// A cmdlet's handler.
#[derive(Debug, Clone, Copy)]
pub(super) enum Run {
    GetChildItem,
    GetContent,
    TestPath,
    JoinPath,
    GetAcl,
    GetLocation,
    SelectString,
    WhereObject,
    ForEachObject,
    SelectObject,
    GetCim,
    WriteOutput,
    WriteHost,
    OutNull,
    OutString,
    StartSleep,
    Network,
    MeasureObject,
    FormatTable,
    FormatList,
    ConvertToJson,
    GetHnsNetwork,
    GetHnsPolicyList,
    GetHnsEndpoint,
    GetNetAdapter,
    GetNetTcpConnection,
    GetProcess,
    GetService,
    ImportModule,
    NewObject,
}

/// A cmdlet: its names, whether only Windows PowerShell has it, its parameters in positional
/// order, its switches, its handler.
pub(super) struct Cmdlet {
    pub(super) names: &'static [&'static str],
    pub(super) desktop_only: bool,
    pub(super) params: &'static [&'static str],
    pub(super) switches: &'static [&'static str],
    pub(super) run: Run,
}

pub(super) const COMMON: &[&str] = &["erroraction", "ea", "warningaction", "outvariable", "errorvariable"];

pub(super) static CMDLETS: &[Cmdlet] = &[
    Cmdlet {
        names: &["get-childitem", "gci", "dir", "ls"],
        desktop_only: false,
        params: &["path", "filter", "literalpath", "include", "exclude", "depth"],
        switches: &["recurse", "file", "directory", "force", "name", "hidden"],
        run: Run::GetChildItem,
    },
    Cmdlet {
        names: &["get-content", "gc", "cat", "type"],
        desktop_only: false,
        params: &["path", "literalpath", "totalcount", "head", "first", "tail", "encoding"],
        switches: &["raw"],
        run: Run::GetContent,
    },
    Cmdlet {
        names: &["test-path"],
        desktop_only: false,
        params: &["path", "literalpath", "pathtype"],
        switches: &["isvalid"],
        run: Run::TestPath,
    },
    Cmdlet {
        names: &["join-path"],
        desktop_only: false,
        params: &["path", "childpath"],
        switches: &["resolve"],
        run: Run::JoinPath,
    },
    Cmdlet {
        names: &["get-acl"],
        desktop_only: false,
        params: &["path", "literalpath"],
        switches: &[],
        run: Run::GetAcl,
    },
    Cmdlet {
        names: &["get-location", "pwd", "gl"],
        desktop_only: false,
        params: &[],
        switches: &[],
        run: Run::GetLocation,
    },
    Cmdlet {
        names: &["select-string", "sls"],
        desktop_only: false,
        params: &["pattern", "path", "literalpath", "encoding"],
        switches: &[
            "simplematch",
            "list",
            "casesensitive",
            "quiet",
            "notmatch",
            "allmatches",
        ],
        run: Run::SelectString,
    },
    Cmdlet {
        names: &["where-object", "where", "?"],
        desktop_only: false,
        params: &["filterscript", "value"],
        switches: &[
            "eq", "ne", "gt", "ge", "lt", "le", "like", "notlike", "match", "notmatch", "contains", "in",
        ],
        run: Run::WhereObject,
    },
    Cmdlet {
        names: &["foreach-object", "foreach", "%"],
        desktop_only: false,
        params: &["process", "membername"],
        switches: &[],
        run: Run::ForEachObject,
    },
    Cmdlet {
        names: &["select-object", "select"],
        desktop_only: false,
        params: &["property", "first", "last", "skip", "expandproperty", "index"],
        switches: &["unique"],
        run: Run::SelectObject,
    },
    Cmdlet {
        names: &["get-ciminstance", "gcim", "get-wmiobject", "gwmi"],
        desktop_only: false,
        params: &["classname", "filter", "namespace", "class", "query"],
        switches: &[],
        run: Run::GetCim,
    },
    Cmdlet {
        names: &["get-process", "gps"],
        desktop_only: false,
        params: &["name", "processname", "id"],
        switches: &["includeusername", "module", "fileversioninfo"],
        run: Run::GetProcess,
    },
    Cmdlet {
        names: &["get-service", "gsv"],
        desktop_only: false,
        params: &["name", "displayname", "include", "exclude"],
        switches: &["dependentservices", "requiredservices"],
        run: Run::GetService,
    },
    Cmdlet {
        names: &["import-module", "ipmo"],
        desktop_only: false,
        params: &["name", "prefix", "minimumversion", "requiredversion"],
        switches: &["force", "global", "passthru", "disablenamechecking"],
        run: Run::ImportModule,
    },
    Cmdlet {
        names: &["new-object"],
        desktop_only: false,
        params: &["typename", "argumentlist", "comobject", "property"],
        switches: &["strict"],
        run: Run::NewObject,
    },
    Cmdlet {
        names: &["write-output", "echo", "write"],
        desktop_only: false,
        params: &["inputobject"],
        switches: &["noenumerate"],
        run: Run::WriteOutput,
    },
    Cmdlet {
        names: &["write-host"],
        desktop_only: false,
        params: &["object", "foregroundcolor", "backgroundcolor", "separator"],
        switches: &["nonewline"],
        run: Run::WriteHost,
    },
    Cmdlet {
        names: &["out-null"],
        desktop_only: false,
        params: &[],
        switches: &[],
        run: Run::OutNull,
    },
    Cmdlet {
        names: &["out-string"],
        desktop_only: false,
        params: &["width"],
        switches: &["stream"],
        run: Run::OutString,
    },
    Cmdlet {
        names: &["out-default", "out-host", "write-verbose", "write-debug"],
        desktop_only: false,
        params: &[],
        switches: &[],
        run: Run::WriteOutput,
    },
    Cmdlet {
        names: &["start-sleep", "sleep"],
        desktop_only: false,
        params: &["seconds", "milliseconds"],
        switches: &[],
        run: Run::StartSleep,
    },
    Cmdlet {
        names: &["resolve-dnsname", "test-netconnection", "tnc"],
        desktop_only: true,
        params: &[
            "name",
            "server",
            "type",
            "computername",
            "port",
            "commontcpport",
            "informationlevel",
        ],
        switches: &["quiet"],
        run: Run::Network,
    },
    Cmdlet {
        names: &["measure-object", "measure"],
        desktop_only: false,
        params: &["property", "inputobject"],
        switches: &["sum", "average", "maximum", "minimum", "standarddeviation"],
        run: Run::MeasureObject,
    },
    Cmdlet {
        names: &["format-table", "ft"],
        desktop_only: false,
        params: &["property"],
        switches: &["autosize", "wrap", "hidetableheaders"],
        run: Run::FormatTable,
    },
    Cmdlet {
        names: &["format-list", "fl"],
        desktop_only: false,
        params: &["property"],
        switches: &[],
        run: Run::FormatList,
    },
    Cmdlet {
        names: &["convertto-json"],
        desktop_only: false,
        params: &["inputobject", "depth"],
        switches: &["compress", "enumsasstrings", "asarray"],
        run: Run::ConvertToJson,
    },
    // The HostNetworkingService module: on the host only (a HostProcess container).
    Cmdlet {
        names: &["get-hnsnetwork"],
        desktop_only: true,
        params: &["id"],
        switches: &["detailed"],
        run: Run::GetHnsNetwork,
    },
    Cmdlet {
        names: &["get-hnspolicylist"],
        desktop_only: true,
        params: &["id"],
        switches: &["detailed"],
        run: Run::GetHnsPolicyList,
    },
    Cmdlet {
        names: &["get-hnsendpoint"],
        desktop_only: true,
        params: &["id"],
        switches: &["detailed"],
        run: Run::GetHnsEndpoint,
    },
    // The CIM-based NetAdapter and NetTCPIP modules of Windows PowerShell.
    Cmdlet {
        names: &["get-netadapter"],
        desktop_only: true,
        params: &["name", "interfacedescription", "ifindex"],
        switches: &["physical", "includehidden"],
        run: Run::GetNetAdapter,
    },
    Cmdlet {
        names: &["get-nettcpconnection"],
        desktop_only: true,
        params: &[
            "localaddress",
            "localport",
            "remoteaddress",
            "remoteport",
            "state",
            "owningprocess",
            "appliedsetting",
        ],
        switches: &[],
        run: Run::GetNetTcpConnection,
    },
    // Modelled as Windows PowerShell 5.1's (.NET Framework WebException messages); PowerShell
    // Core's HttpClient-based cmdlet words its errors differently and is not simulated.
    Cmdlet {
        names: &["invoke-restmethod", "irm"],
        desktop_only: true,
        params: &[
            "uri",
            "timeoutsec",
            "method",
            "headers",
            "body",
            "contenttype",
            "outfile",
        ],
        switches: &["usebasicparsing"],
        run: Run::Network,
    },
];

/// An argument as given, evaluated.
pub(super) enum Given {
    Param(String, Option<V>),
    Value(V),
}

/// A cmdlet call's bound arguments.
pub(super) struct Invocation {
    pub(super) named: Vec<(String, V)>,
    pub(super) switches: Vec<String>,
    pub(super) positional: Vec<V>,
}

impl Invocation {
    /// Binds the arguments in order: `-Name value` (a name may be abbreviated to a prefix of
    /// the parameter's) or `-Name:value`, switches, and the values left as positional ones.
    pub(super) fn bind(spec: &Cmdlet, given: Vec<Given>) -> Self {
        let mut inv = Self {
            named: Vec::new(),
            switches: Vec::new(),
            positional: Vec::new(),
        };
        let mut it = given.into_iter().peekable();
        while let Some(g) = it.next() {
            match g {
                Given::Value(v) => inv.positional.push(v),
                Given::Param(name, inline) => {
                    let switch = spec
                        .switches
                        .iter()
                        .find(|p| **p == name || p.starts_with(name.as_str()));
                    let param = spec
                        .params
                        .iter()
                        .chain(COMMON)
                        .find(|p| **p == name || p.starts_with(name.as_str()));
                    match (switch, param, inline) {
                        (_, Some(p), Some(v)) => inv.named.push((p.to_string(), v)),
                        (Some(sw), _, _) => inv.switches.push(sw.to_string()),
                        (None, Some(p), None) => match it.next_if(|n| matches!(n, Given::Value(_))) {
                            Some(Given::Value(v)) => inv.named.push((p.to_string(), v)),
                            _ => inv.named.push((p.to_string(), V::Null)),
                        },
                        (None, None, _) => inv.switches.push(name),
                    }
                }
            }
        }
        inv
    }

    pub(super) fn get(&self, name: &str) -> Option<&V> {
        self.named.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    pub(super) fn switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    /// `-ErrorAction SilentlyContinue` / `Ignore` (or `0`).
    pub(super) fn silent(&self) -> bool {
        ["erroraction", "ea"].iter().any(|p| {
            self.get(p)
                .map(V::text)
                .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "silentlycontinue" | "ignore" | "0"))
        })
    }

    /// `-ErrorAction Stop` (or `1`): the cmdlet's errors terminate the script (about_CommonParameters:
    /// "Stop: Displays the error message and stops executing the command").
    pub(super) fn stop(&self) -> bool {
        ["erroraction", "ea"].iter().any(|p| {
            self.get(p)
                .map(V::text)
                .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "stop" | "1"))
        })
    }

    /// The value of the first of `names` given, else the `n`-th positional value.
    pub(super) fn value(&self, names: &[&str], n: usize) -> Option<V> {
        names
            .iter()
            .find_map(|p| self.get(p).cloned())
            .or_else(|| self.positional.get(n).cloned())
    }
}

pub(super) fn texts(v: Option<V>) -> Vec<String> {
    v.map(|v| v.items().iter().map(V::text).collect()).unwrap_or_default()
}

/// One pipeline element's errors and whether it succeeded.
#[derive(Debug, Default)]
pub(super) struct Errors {
    pub(super) text: Vec<String>,
    pub(super) failed: bool,
}

impl Errors {
    pub(super) fn add(&mut self, text: String) {
        self.text.push(text);
        self.failed = true;
    }
}
