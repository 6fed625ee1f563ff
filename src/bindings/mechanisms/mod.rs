//! Bindings of [`crate::mechanisms`] (Python: `dpcore.mechanisms`).

pub(super) mod expmech;
pub(super) mod multinomial;
pub(super) mod noise;
