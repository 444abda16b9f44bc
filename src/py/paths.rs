//! Paths across the binding (issue 19): a `str` path holding lone surrogates U+DC80..U+DCFF
//! (what Python's `surrogateescape` makes of bytes that are not UTF-8, and what a JSON
//! `"\udcff"` decodes to) names those bytes, as `os.fsencode` would; a path the core gives
//! back that names such bytes is that `str` again.

use std::ops::Deref;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::error::{Error, ErrorKind};
use crate::fs::text::names::{lossless, raw_bytes};

/// A path argument as the core takes it: UTF-8 text, or marked text
/// ([`crate::fs::text::names::lossless`]) for a name that is not UTF-8.
///
/// Errors: `embedded null byte` (retryable, as the core's resolver says it) for a NUL, so no
/// NUL the model wrote can be read as the mark of a raw byte; `UnicodeEncodeError` for a
/// surrogate that stands for no byte (U+D800..U+DC7F, U+DD00..U+DFFF).
pub struct ModelPath(pub String);

impl Deref for ModelPath {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

fn embedded_null() -> PyErr {
    Error::new(ErrorKind::InvalidArgument, "embedded null byte").into()
}

impl FromPyObject<'_, '_> for ModelPath {
    type Error = PyErr;

    fn extract(obj: Borrowed<'_, '_, PyAny>) -> Result<Self, Self::Error> {
        let s = obj.cast::<PyString>()?;
        let text = match s.to_str() {
            Ok(text) => {
                if text.contains('\0') {
                    return Err(embedded_null());
                }
                return Ok(ModelPath(text.to_owned()));
            }
            Err(_) => s.call_method1("encode", ("utf-8", "surrogateescape"))?,
        };
        let bytes = text.cast::<PyBytes>()?.as_bytes();
        if bytes.contains(&0) {
            return Err(embedded_null());
        }
        Ok(ModelPath(lossless(bytes).into_owned()))
    }
}

/// `path` (from the core) as Python's `str`: marked text as the lone surrogates
/// `surrogateescape` decodes its raw bytes to, anything else unchanged.
pub fn py_path<'py>(py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyString>> {
    if !path.contains('\0') {
        return Ok(PyString::new(py, path));
    }
    let bytes = PyBytes::new(py, &raw_bytes(path));
    Ok(bytes
        .call_method1("decode", ("utf-8", "surrogateescape"))?
        .cast_into::<PyString>()?)
}
