//! Numeric bounds: `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum` (draft 4 boolean forms included), and `multipleOf`.

use serde_json::{Map, Value};

use super::{invalid, wrong, Ctx};
use crate::schema::decimal::Decimal;
use crate::schema::error::SchemaError;
use crate::schema::range::{Bound, Divisor, NumRange};

impl<'a> Ctx<'a> {
    pub(super) fn range(
        &self,
        map: &Map<String, Value>,
        ptr: &str,
    ) -> Result<NumRange, SchemaError> {
        let number = |key: &str| -> Result<Option<Decimal>, SchemaError> {
            match map.get(key) {
                None => Ok(None),
                Some(Value::Number(n)) => Decimal::from_json(n)
                    .map(Some)
                    .ok_or_else(|| wrong(ptr, key, "a number")),
                Some(Value::Bool(_)) if key.starts_with("exclusive") => Ok(None),
                Some(_) => Err(wrong(ptr, key, "a number")),
            }
        };
        // Draft 4 writes exclusiveMinimum/Maximum as booleans modifying minimum/maximum.
        let flag = |key: &str| matches!(map.get(key), Some(Value::Bool(true)));
        let bound =
            |inclusive: Option<Decimal>, exclusive: Option<Decimal>, draft4: bool| -> Vec<Bound> {
                let mut out = Vec::new();
                if let Some(d) = inclusive {
                    out.push(if draft4 {
                        Bound::Exclusive(d)
                    } else {
                        Bound::Inclusive(d)
                    });
                }
                if let Some(d) = exclusive {
                    out.push(Bound::Exclusive(d));
                }
                out
            };
        let mins = bound(
            number("minimum")?,
            number("exclusiveMinimum")?,
            flag("exclusiveMinimum"),
        );
        let maxs = bound(
            number("maximum")?,
            number("exclusiveMaximum")?,
            flag("exclusiveMaximum"),
        );
        let mut range = NumRange::default();
        for b in mins {
            range = range.intersect(&NumRange::between(Some(b), None));
        }
        for b in maxs {
            range = range.intersect(&NumRange::between(None, Some(b)));
        }
        if let Some(value) = map.get("multipleOf") {
            let d = match value {
                Value::Number(n) => Decimal::from_json(n),
                _ => None,
            }
            .ok_or_else(|| wrong(ptr, "multipleOf", "a number"))?;
            let divisor =
                Divisor::of(&d).map_err(|e| invalid(ptr, "multipleOf", format!("{d} {e}")))?;
            range.divisors.push(divisor);
        }
        if let (true, Some(lo), Some(hi)) = (range.is_empty(), &range.min, &range.max) {
            return Err(invalid(
                ptr,
                "minimum",
                format!(
                    "{} is above \"maximum\" {}: no number is valid",
                    lo.value(),
                    hi.value()
                ),
            ));
        }
        Ok(range)
    }
}
