#![allow(non_snake_case)] // PHP parameter names are camelCase: `minLength: 1`.
//! The attributes `Schema::fromClass()` reads: `Description`, `Constraint`
//! and `ListOf`. PHP needs an internal class marked as an attribute before
//! `ReflectionAttribute::newInstance()` builds one; the macro registers the
//! classes after this extension's MINIT code runs, so they are marked in
//! PHP's post-startup callback, chained before whatever was there.

use std::sync::atomic::{AtomicPtr, Ordering};

use ext_php_rs::convert::FromZval;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::Zval;
use ext_php_rs::zend::ClassEntry;
use serde_json::Value;

use super::convert;
use super::exceptions::{infer_exception, internal_class, type_error};

/// Where an attribute may stand (`Attribute::TARGET_*`).
const TARGET_CLASS: u32 = 1;
const TARGET_PROPERTY: u32 = 8;
const TARGET_PARAMETER: u32 = 32;

pub const DESCRIPTION: &str = "Displace\\Infer\\Description";
pub const CONSTRAINT: &str = "Displace\\Infer\\Constraint";
pub const LIST_OF: &str = "Displace\\Infer\\ListOf";

/// `#[Description('…')]` on a class, a property or a promoted constructor
/// parameter: the `description` of its schema.
#[php_class]
#[php(name = "Displace\\Infer\\Description")]
#[php(flags = ClassFlags::Final)]
#[derive(Debug)]
pub struct Description {
    #[php(prop)]
    pub text: String,
}

#[php_impl]
impl Description {
    pub fn __construct(text: String) -> Self {
        Self { text }
    }
}

/// `#[ListOf(Foo::class)]` (or `'string'`, `'int'`, `'float'`, `'bool'`) on
/// an `array` property: the type of its items.
#[php_class]
#[php(name = "Displace\\Infer\\ListOf")]
#[php(flags = ClassFlags::Final)]
#[derive(Debug)]
pub struct ListOf {
    #[php(prop)]
    pub r#type: String,
}

#[php_impl]
impl ListOf {
    pub fn __construct(r#type: String) -> Self {
        Self { r#type }
    }
}

/// `#[Constraint(minimum: 0, pattern: '…', …)]` on a property: JSON Schema
/// keywords for its schema, checked as `Schema`'s methods check them.
#[php_class]
#[php(name = "Displace\\Infer\\Constraint")]
#[php(flags = ClassFlags::Final)]
#[derive(Debug)]
pub struct Constraint {
    pub keywords: Vec<(String, Value)>,
}

#[php_impl]
impl Constraint {
    #[allow(clippy::too_many_arguments)]
    pub fn __construct(
        minLength: Option<i64>,
        maxLength: Option<i64>,
        pattern: Option<String>,
        format: Option<String>,
        minimum: Option<&Zval>,
        maximum: Option<&Zval>,
        exclusiveMinimum: Option<&Zval>,
        exclusiveMaximum: Option<&Zval>,
        multipleOf: Option<&Zval>,
        minItems: Option<i64>,
        maxItems: Option<i64>,
        uniqueItems: Option<bool>,
    ) -> PhpResult<Self> {
        let mut keywords = Vec::new();
        let mut put = |keyword: &str, value: Option<Value>| {
            if let Some(v) = value {
                keywords.push((keyword.to_owned(), v));
            }
        };
        put("minLength", minLength.map(Value::from));
        put("maxLength", maxLength.map(Value::from));
        put("pattern", pattern.map(Value::from));
        put("format", format.map(Value::from));
        for (keyword, value) in [
            ("minimum", minimum),
            ("maximum", maximum),
            ("exclusiveMinimum", exclusiveMinimum),
            ("exclusiveMaximum", exclusiveMaximum),
            ("multipleOf", multipleOf),
        ] {
            put(keyword, number_arg("Constraint", keyword, value)?);
        }
        put("minItems", minItems.map(Value::from));
        put("maxItems", maxItems.map(Value::from));
        put("uniqueItems", uniqueItems.map(Value::from));
        Ok(Self { keywords })
    }

    /// The keywords given, as a schema fragment.
    pub fn to_array(&self) -> PhpResult<Zval> {
        let map: serde_json::Map<String, Value> = self.keywords.iter().cloned().collect();
        convert::json_to_zval(&Value::Object(map)).map_err(infer_exception)
    }
}

/// An `int|float|null` argument as a JSON number; NAN, INF and other types
/// are refused.
pub fn number_arg(method: &str, name: &str, value: Option<&Zval>) -> PhpResult<Option<Value>> {
    let Some(value) = value.filter(|v| !v.dereference().is_null()) else {
        return Ok(None);
    };
    if let Some(i) = convert::int(value) {
        return Ok(Some(Value::from(i)));
    }
    convert::finite_float(value)
        .and_then(serde_json::Number::from_f64)
        .map(|n| Some(Value::Number(n)))
        .ok_or_else(|| {
            type_error(format!(
                "{method}: {name} must be a finite int or float, got {}",
                convert::describe(value)
            ))
        })
}

/// The keyword-value pairs of a `Constraint` instance.
pub fn constraint_keywords(object: &Zval) -> Option<Vec<(String, Value)>> {
    <&Constraint>::from_zval(object).map(|c| c.keywords.clone())
}

/// The text of a `Description` instance.
pub fn description_text(object: &Zval) -> Option<String> {
    <&Description>::from_zval(object).map(|d| d.text.clone())
}

/// The type named by a `ListOf` instance.
pub fn list_of_type(object: &Zval) -> Option<String> {
    <&ListOf>::from_zval(object).map(|l| l.r#type.clone())
}

extern "C" {
    static mut zend_post_startup_cb: Option<unsafe extern "C" fn() -> i32>;
    fn zend_internal_attribute_register(ce: *mut ClassEntry, flags: u32) -> *mut std::ffi::c_void;
}

static PREVIOUS: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());

/// In MINIT: have the attribute classes marked once every module started.
pub fn install() {
    // SAFETY: MINIT runs on one thread before any request; the callback
    // pointer is PHP's to read once startup is done, and the one found is
    // kept and called after ours.
    unsafe {
        let previous = zend_post_startup_cb;
        if let Some(p) = previous {
            PREVIOUS.store(p as *mut (), Ordering::Release);
        }
        zend_post_startup_cb = Some(post_startup);
    }
}

unsafe extern "C" fn post_startup() -> i32 {
    for (name, flags) in [
        (
            DESCRIPTION,
            TARGET_CLASS | TARGET_PROPERTY | TARGET_PARAMETER,
        ),
        (CONSTRAINT, TARGET_PROPERTY | TARGET_PARAMETER),
        (LIST_OF, TARGET_PROPERTY | TARGET_PARAMETER),
    ] {
        if let Some(ce) = internal_class(name) {
            // SAFETY: the class entry is a registered internal class, which
            // lives as long as the process; PHP is still single-threaded.
            unsafe { zend_internal_attribute_register(std::ptr::from_ref(ce).cast_mut(), flags) };
        }
    }
    let previous = PREVIOUS.load(Ordering::Acquire);
    if previous.is_null() {
        return 0;
    }
    // SAFETY: stored from a function pointer of this very type in `install`.
    let previous: unsafe extern "C" fn() -> i32 = unsafe { std::mem::transmute(previous) };
    unsafe { previous() }
}
