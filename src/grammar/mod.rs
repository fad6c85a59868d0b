//! GBNF: the AST the converter builds (`expr`) and the checker for grammars
//! users pass in (`check`).

pub mod check;
pub mod expr;
