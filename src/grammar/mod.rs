//! GBNF: the AST the converter builds (`expr`), the checker for grammars
//! (`check`), the checked text that is the only grammar the engine
//! accepts (`gbnf`), and the text a checked grammar forces next
//! (`forced`).

pub mod check;
pub mod compose;
pub mod expr;
pub mod forced;
pub mod gbnf;

pub use gbnf::CheckedGbnf;
