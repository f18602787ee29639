//! The analysis as every format shows it: the terminal report (per rank or grouped, see
//! [`super::groups`]), JSON ([`super::json`], streamed), CSV and markdown ([`super::formats`]).

use std::io::Write;

use anyhow::Result;

use super::groups::View;
use super::Render;
use crate::analyze::reduce::groups::Dim;
use crate::analyze::Analysis;

/// An analysis and how the terminal shows it.
pub struct AnalysisReport<'a> {
    pub analysis: &'a Analysis,
    /// Per-rank tables or distributions (terminal and HTML).
    pub view: View,
    /// The dimension the grouped view groups by.
    pub group_by: Option<Dim>,
}

impl<'a> AnalysisReport<'a> {
    /// The report in the form the rank count calls for.
    pub fn new(analysis: &'a Analysis) -> Self {
        AnalysisReport {
            analysis,
            view: View::Auto,
            group_by: None,
        }
    }
}

impl Render for AnalysisReport<'_> {
    fn terminal(&self, w: &mut dyn Write) -> Result<()> {
        let text = super::terminal::render_view(self.analysis, self.view, self.group_by);
        w.write_all(text.as_bytes())?;
        Ok(())
    }

    fn json(&self, w: &mut dyn Write) -> Result<()> {
        super::json::write(self.analysis, w)
    }

    fn csv(&self, w: &mut dyn Write) -> Result<()> {
        super::formats::write_csv(self.analysis, w)
    }

    fn markdown(&self, w: &mut dyn Write) -> Result<()> {
        super::formats::write_markdown(self.analysis, w)
    }
}
