//! `store.lock(name, ttl_s, owner=None)`: a TTL lease used as a context
//! manager (SPEC §10).

use std::sync::Arc;

use alkstore_core::store::lock::validate_lock;
use alkstore_core::Store as CoreStore;
use pyo3::prelude::*;

use crate::convert::duration;
use crate::errors::IntoPyResult;
use crate::exit;
use crate::repr;

/// A lease on `name` for `owner`: `with store.lock(...) as lock:` acquires
/// (or raises `LockHeld`) and releases on exit. Lock objects with the same
/// owner share one lease.
#[pyclass(name = "Lock", module = "alkstore", frozen)]
pub struct Lock {
    store: Arc<CoreStore>,
    name: String,
    owner: String,
    ttl_s: i64,
}

impl Lock {
    /// Validates the arguments (no I/O); `owner` None draws a fresh random one.
    pub(crate) fn new(
        py: Python<'_>,
        store: Arc<CoreStore>,
        name: &str,
        ttl_s: &Bound<'_, PyAny>,
        owner: Option<String>,
    ) -> PyResult<Self> {
        let ttl_s = duration(ttl_s, "ttl_s")?;
        let owner = match owner {
            Some(o) => o,
            None => py.import("uuid")?.call_method0("uuid4")?.getattr("hex")?.extract()?,
        };
        validate_lock(name, &owner, Some(ttl_s)).py()?;
        Ok(Lock { store, name: name.to_owned(), owner, ttl_s })
    }
}

#[pymethods]
impl Lock {
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }
    #[getter]
    fn owner(&self) -> &str {
        &self.owner
    }
    /// The lease length each acquire and renew asks for, whole seconds.
    #[getter]
    fn ttl_s(&self) -> i64 {
        self.ttl_s
    }

    /// Extends the lease to `now + ttl_s`; False once it lapsed or was taken.
    fn renew(&self, py: Python<'_>) -> PyResult<bool> {
        exit::detach(py, || self.store.lock_renew(&self.name, &self.owner, self.ttl_s)).py()
    }

    fn __enter__(slf: &Bound<'_, Self>) -> PyResult<Py<Self>> {
        let me = slf.get();
        exit::detach(slf.py(), || me.store.lock_acquire(&me.name, &me.owner, me.ttl_s)).py()?;
        Ok(slf.clone().unbind())
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        exit::detach(py, || self.store.lock_release(&self.name, &self.owner)).py()?;
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "<alkstore.Lock name={} owner={} ttl_s={}>",
            repr::text(py, &self.name)?,
            repr::text(py, &self.owner)?,
            self.ttl_s
        ))
    }
}
