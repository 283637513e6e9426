//! Payload conversion (docs/adr/0003-json-payloads.md).
//!
//! Encoding walks the Python object in Rust and writes JSON text with the
//! exact semantics the contract promises — `json.loads(json.dumps(p))` — plus
//! the stricter rules: dict keys must be `str` (TypeError), NaN/Infinity are
//! refused, and so is what core's payload limits refuse (nesting, integer
//! digits: `PayloadError`, a ValueError). Decoding calls CPython's own JSON
//! scanner, the C half of `json.loads`, the exact inverse of what we write;
//! stored text it cannot decode is a `PayloadError` naming why.

use std::fmt::Write;

use alkstore_core::rules::payload::{self, Refusal, MAX_DEPTH};
use alkstore_core::Error;
use pyo3::exceptions::{PyRecursionError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::errors::to_pyerr;

static LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
/// `json.loads`' own C scanner (`_json.make_scanner` over a default
/// decoder), when the interpreter has one.
static SCAN: PyOnceLock<Option<Py<PyAny>>> = PyOnceLock::new();

/// Encodes `obj` as JSON text.
pub fn encode(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    encode_at(obj, "payload")
}

/// Encodes `obj` as JSON text; a refusal names where in `obj` it is, from
/// `root` (`payload.to[2]`, `kwargs.when`), so a task can say which argument.
pub fn encode_at(obj: &Bound<'_, PyAny>, root: &str) -> PyResult<String> {
    let mut out = String::with_capacity(64);
    match write_value(obj, &mut out, 0) {
        Ok(()) => Ok(out),
        Err(Refused::Py(e)) => Err(e),
        // The path of a cycle would be as long as the limit: name only the root.
        Err(Refused::Deep) => {
            Err(to_pyerr(Error::Payload(format!("{root} {} (or contains a cycle)", Refusal::TooDeep))))
        }
        Err(Refused::At { path, why, kind }) => {
            let mut at = root.to_owned();
            for seg in path.iter().rev() {
                seg.write(&mut at);
            }
            let msg = why.replace("{at}", &at);
            Err(match kind {
                Kind::Type => PyTypeError::new_err(msg),
                Kind::Value => to_pyerr(Error::Payload(msg)),
            })
        }
    }
}

/// A value the encoder refused, and where: the path is collected on the way
/// back out of the recursion (innermost first), so a payload that encodes
/// pays nothing for it.
enum Refused {
    /// A refusal with its message, `{at}` standing for the path.
    At { path: Vec<Seg>, why: String, kind: Kind },
    /// Arrays and objects nested past core's limit.
    Deep,
    /// Python raised while we looked at a value.
    Py(PyErr),
}

enum Kind {
    /// Not JSON at all: TypeError.
    Type,
    /// JSON past a limit: PayloadError, a ValueError.
    Value,
}

/// One step into a value: a dict key or a sequence index.
enum Seg {
    Key(String),
    Index(usize),
}

impl Seg {
    fn write(&self, out: &mut String) {
        match self {
            // `.name` when the key reads as a name, else `['key']`.
            Seg::Key(k)
                if k.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
                    && k.chars().all(|c| c.is_alphanumeric() || c == '_') =>
            {
                let _ = write!(out, ".{k}");
            }
            Seg::Key(k) => {
                let _ = write!(out, "[{k:?}]");
            }
            Seg::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        }
    }
}

impl From<PyErr> for Refused {
    fn from(e: PyErr) -> Self {
        Refused::Py(e)
    }
}

fn refuse(kind: Kind, why: String) -> Refused {
    Refused::At { path: Vec::new(), why, kind }
}

/// Adds `seg` to a refusal coming out of a nested value.
fn inside(e: Refused, seg: Seg) -> Refused {
    match e {
        Refused::At { mut path, why, kind } => {
            path.push(seg);
            Refused::At { path, why, kind }
        }
        other => other,
    }
}

/// Decodes JSON text written by [`encode`]; `what` names it in an error
/// ("payload", "result").
///
/// Through the C scanner `json.loads` itself ends in, called directly: the
/// same values, and no Python code runs. That matters to a Worker's daemon
/// threads, which decode payloads while the main thread may be finalizing
/// the interpreter: Python code can hand the GIL over midway, and a thread
/// taking it back then is ended by CPython with a Rust frame on its stack,
/// which aborts the process. Anything the scanner does not take whole
/// (leading space, trailing text, bad JSON) goes to `json.loads` for its
/// value or its error.
///
/// Text written around the enqueue checks (a raw `INSERT`, a version before
/// the limits) may not decode: too deep for the decoder's recursion, an
/// integer past `int()`'s digit limit, not JSON at all. That is a
/// `PayloadError` naming what is wrong, never a bare `RecursionError`.
pub fn decode(py: Python<'_>, text: &str, what: &str) -> PyResult<Py<PyAny>> {
    if let Some(scan) = scanner(py)? {
        if let Ok(found) = scan.bind(py).call1((text, 0)) {
            let (value, end): (Bound<'_, PyAny>, usize) = found.extract()?;
            let chars = if text.is_ascii() { text.len() } else { text.chars().count() };
            if end == chars {
                return Ok(value.unbind());
            }
        }
    }
    let loads = LOADS.get_or_try_init(py, || py.import("json")?.getattr("loads").map(Bound::unbind))?;
    loads.bind(py).call1((text,)).map(Bound::unbind).map_err(|e| undecodable(py, e, text, what))
}

/// The `PayloadError` for stored `text` that `json.loads` refused with `e`:
/// core's limit it breaks when it breaks one, else the decoder's own words.
/// Anything but a decoding error (a `MemoryError`, an interrupt) passes.
fn undecodable(py: Python<'_>, e: PyErr, text: &str, what: &str) -> PyErr {
    if !(e.is_instance_of::<PyValueError>(py) || e.is_instance_of::<PyRecursionError>(py)) {
        return e;
    }
    let why = match payload::check(text) {
        Err(r) => format!("it {r}"),
        Ok(()) => {
            format!("{}: {}", e.get_type(py).name().map_or_else(|_| "error".into(), |n| n.to_string()), e.value(py))
        }
    };
    let err = to_pyerr(Error::Payload(format!("the stored {what} cannot be decoded: {why}")));
    err.set_cause(py, Some(e));
    err
}

/// Looks up the scanner and `json.loads` once, when the module loads: an
/// import runs Python code, which must not happen in a daemon thread's first
/// decode while the interpreter exits.
pub fn init(py: Python<'_>) -> PyResult<()> {
    scanner(py)?;
    LOADS.get_or_try_init(py, || py.import("json")?.getattr("loads").map(Bound::unbind))?;
    Ok(())
}

fn scanner(py: Python<'_>) -> PyResult<&Option<Py<PyAny>>> {
    SCAN.get_or_try_init(py, || -> PyResult<Option<Py<PyAny>>> {
        let make = py.import("json.scanner")?.getattr("c_make_scanner")?;
        if make.is_none() {
            return Ok(None);
        }
        let decoder = py.import("json.decoder")?.getattr("JSONDecoder")?.call0()?;
        Ok(Some(make.call1((decoder,))?.unbind()))
    })
}

/// Writes `obj`, found inside `depth` arrays and objects.
fn write_value(obj: &Bound<'_, PyAny>, out: &mut String, depth: usize) -> Result<(), Refused> {
    if obj.is_none() {
        out.push_str("null");
    } else if let Ok(s) = obj.cast::<PyString>() {
        write_str(s, out)?;
    } else if let Ok(b) = obj.cast::<PyBool>() {
        out.push_str(if b.is_true() { "true" } else { "false" });
    } else if obj.is_instance_of::<PyInt>() {
        match obj.extract::<i64>() {
            Ok(i) => {
                let _ = write!(out, "{i}");
            }
            // Beyond 64 bits: int's own decimal form keeps it exact, as
            // json.dumps does, within core's digit limit.
            Err(_) => match obj.py().get_type::<PyInt>().call_method1("__repr__", (obj,)) {
                Ok(text) => {
                    let text = text.extract::<String>()?;
                    if let Err(r) = payload::check(&text) {
                        return Err(refuse(Kind::Value, format!("{{at}} {r}")));
                    }
                    out.push_str(&text);
                }
                // Past the digits this process converts (sys.set_int_max_str_digits).
                Err(e) if e.is_instance_of::<PyValueError>(obj.py()) => {
                    return Err(refuse(
                        Kind::Value,
                        format!("{{at}} is an integer too long to write as text ({})", e.value(obj.py())),
                    ))
                }
                Err(e) => return Err(e.into()),
            },
        }
    } else if let Ok(f) = obj.cast::<PyFloat>() {
        let v = f.value();
        if !v.is_finite() {
            return Err(refuse(Kind::Value, format!("{{at}} is {v}: NaN and Infinity are not valid JSON")));
        }
        // Shortest round-trip form; always has '.' or 'e', so it decodes as a float.
        out.push_str(ryu::Buffer::new().format_finite(v));
    } else if let Ok(d) = obj.cast::<PyDict>() {
        too_deep(depth)?;
        out.push('{');
        for (i, (k, v)) in d.iter().enumerate() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err(refuse(
                    Kind::Type,
                    format!("{{at}} has a dict key of type {}: JSON object keys must be str", k.get_type().name()?),
                ));
            };
            if i > 0 {
                out.push(',');
            }
            write_str(key, out)?;
            out.push(':');
            write_value(&v, out, depth + 1).map_err(|e| inside(e, Seg::Key(key.to_string_lossy().into_owned())))?;
        }
        out.push('}');
    } else if let Ok(l) = obj.cast::<PyList>() {
        too_deep(depth)?;
        write_seq(l.iter(), out, depth)?;
    } else if let Ok(t) = obj.cast::<PyTuple>() {
        too_deep(depth)?;
        write_seq(t.iter(), out, depth)?;
    } else {
        return Err(refuse(
            Kind::Type,
            format!(
                "{{at}} is not JSON-serialisable: object of type {} (use dict, list, str, int, float, bool or None)",
                obj.get_type().name()?
            ),
        ));
    }
    Ok(())
}

/// Refuses an array or object inside `depth` others when that nests past
/// core's limit: the payload is too deep, or (as often) holds a cycle.
fn too_deep(depth: usize) -> Result<(), Refused> {
    if depth < MAX_DEPTH {
        return Ok(());
    }
    Err(Refused::Deep)
}

fn write_seq<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    out: &mut String,
    depth: usize,
) -> Result<(), Refused> {
    out.push('[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_value(&item, out, depth + 1).map_err(|e| inside(e, Seg::Index(i)))?;
    }
    out.push(']');
    Ok(())
}

fn write_str(s: &Bound<'_, PyString>, out: &mut String) -> PyResult<()> {
    let Ok(text) = s.to_str() else {
        // A lone surrogate has no UTF-8 form; json.dumps writes it as a
        // \uXXXX escape, and so do we (its ASCII output round-trips exactly).
        let dumps = s.py().import("json")?.getattr("dumps")?;
        out.push_str(&dumps.call1((s,))?.extract::<String>()?);
        return Ok(());
    };
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    Ok(())
}
