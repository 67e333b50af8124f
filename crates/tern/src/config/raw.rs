//! The YAML mirror of the configuration file, as written. This is the only
//! module that knows about YAML, so the YAML library stays replaceable here.

use serde::Deserialize;

/// The configuration file's top level. Every key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawConfig {
    pub(crate) listen: Option<Vec<String>>,
    pub(crate) cores: Option<RawCores>,
    pub(crate) zones: Option<RawZones>,
    pub(crate) udp_size: Option<u16>,
    pub(crate) chaos: Option<RawChaos>,
}

/// `cores: [0, 2]` or `cores: all` (or `cores: "0,2-3"`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum RawCores {
    List(Vec<usize>),
    Keyword(String),
}

/// `zones:` with a directory and/or a list.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawZones {
    pub(crate) directory: Option<String>,
    pub(crate) list: Option<Vec<RawZone>>,
}

/// One zone of the list.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawZone {
    pub(crate) origin: String,
    pub(crate) file: String,
}

/// The optional CHAOS-class identity answers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawChaos {
    pub(crate) version: Option<String>,
    pub(crate) identity: Option<String>,
}

/// Parses the YAML text; errors name the line and column.
pub(crate) fn parse(text: &str) -> Result<RawConfig, serde_yaml::Error> {
    if text.trim().is_empty() {
        return Ok(RawConfig::default());
    }
    serde_yaml::from_str(text)
}
