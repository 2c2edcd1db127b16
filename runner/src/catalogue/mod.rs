//! The validated data a run checks against: the rule catalogue ([`rules::Catalogue`]), the
//! suites and their check schema ([`suite::Suites`]), the cause catalogue
//! ([`causes::Catalogue`]) and the remedies checks and causes refer to.

pub mod causes;
pub mod document;
pub mod netpol;
pub mod remedies;
pub mod rules;
pub mod suite;
