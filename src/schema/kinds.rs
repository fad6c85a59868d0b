//! The kinds of JSON values as a bit set: one type, one bit layout, for what
//! a schema's `type` allows and for what an IR node can match.

use std::ops::{BitAnd, BitOr, BitOrAssign};

use serde_json::Value;

use super::decimal::Decimal;

/// A set of kinds of JSON values. Numbers are split by value: integers
/// (`1`, `2.0`) and the others (`1.5`), so `"integer"` is [`Kinds::INT`] and
/// `"number"` is [`Kinds::NUMBER`] (both).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Kinds(u8);

impl Kinds {
    /// No value.
    pub const NONE: Kinds = Kinds(0);
    pub const NULL: Kinds = Kinds(1);
    pub const BOOL: Kinds = Kinds(2);
    /// Integer-valued numbers.
    pub const INT: Kinds = Kinds(4);
    /// Numbers that are not integers.
    pub const FRAC: Kinds = Kinds(8);
    /// Every number.
    pub const NUMBER: Kinds = Kinds(4 | 8);
    pub const STR: Kinds = Kinds(16);
    pub const ARR: Kinds = Kinds(32);
    pub const OBJ: Kinds = Kinds(64);
    /// Every value.
    pub const ALL: Kinds = Kinds(127);

    /// The kinds a JSON Schema type name allows; `None` for an unknown name.
    pub fn from_type_name(name: &str) -> Option<Kinds> {
        Some(match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOL,
            "integer" => Self::INT,
            "number" => Self::NUMBER,
            "string" => Self::STR,
            "array" => Self::ARR,
            "object" => Self::OBJ,
            _ => return None,
        })
    }

    /// The kind of a literal value.
    pub fn of_value(value: &Value) -> Kinds {
        match value {
            Value::Null => Self::NULL,
            Value::Bool(_) => Self::BOOL,
            Value::Number(n) => match Decimal::from_json(n) {
                Some(d) if d.is_integer() => Self::INT,
                _ => Self::FRAC,
            },
            Value::String(_) => Self::STR,
            Value::Array(_) => Self::ARR,
            Value::Object(_) => Self::OBJ,
        }
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether the two sets share a kind.
    pub fn intersects(self, other: Kinds) -> bool {
        self.0 & other.0 != 0
    }
}

impl BitOr for Kinds {
    type Output = Kinds;
    fn bitor(self, other: Kinds) -> Kinds {
        Kinds(self.0 | other.0)
    }
}

impl BitOrAssign for Kinds {
    fn bitor_assign(&mut self, other: Kinds) {
        self.0 |= other.0;
    }
}

impl BitAnd for Kinds {
    type Output = Kinds;
    fn bitand(self, other: Kinds) -> Kinds {
        Kinds(self.0 & other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn type_names_and_values_share_one_layout() {
        assert_eq!(
            Kinds::from_type_name("number"),
            Some(Kinds::INT | Kinds::FRAC)
        );
        assert_eq!(Kinds::from_type_name("integer"), Some(Kinds::INT));
        assert_eq!(Kinds::from_type_name("strin"), None);
        let all = [
            "null", "boolean", "integer", "number", "string", "array", "object",
        ]
        .iter()
        .filter_map(|n| Kinds::from_type_name(n))
        .fold(Kinds::NONE, |a, k| a | k);
        assert_eq!(all, Kinds::ALL);
        assert_eq!(Kinds::of_value(&json!(2.0)), Kinds::INT);
        assert_eq!(Kinds::of_value(&json!(2.5)), Kinds::FRAC);
        assert!(Kinds::of_value(&json!(2.5)).intersects(Kinds::from_type_name("number").unwrap()));
        assert!(!Kinds::of_value(&json!(2.5)).intersects(Kinds::INT));
        assert!((Kinds::STR & Kinds::OBJ).is_empty());
    }
}
