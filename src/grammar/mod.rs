//! GBNF: the AST the converter builds (`expr`), the checker for grammars
//! (`check`), and the checked text that is the only grammar the engine
//! accepts (`gbnf`).

pub mod check;
pub mod compose;
pub mod expr;
pub mod gbnf;

pub use gbnf::CheckedGbnf;
