use std::collections::BTreeMap;

use minijinja::syntax::SyntaxConfig;
use minijinja::{Environment, UndefinedBehavior, Value};

use crate::CodegenError;

/// The template files of a generated program, in the order they are emitted. Each renders to a file of the
/// same name.
pub const TEMPLATE_NAMES: [&str; 9] = [
    "bwd_params.h",
    "schedule.cuh",
    "dq_semaphore.cuh",
    "bwd_mainloop_sm80.cuh",
    "bwd_mainloop_sm90.cuh",
    "bwd_preprocess.cuh",
    "bwd_postprocess.cuh",
    "fwd_reference.cuh",
    "harness.cu",
];

/// The embedded copies of `kernels/templates/`.
pub(crate) const EMBEDDED: [(&str, &str); 9] = [
    ("bwd_params.h", include_str!("../../../kernels/templates/bwd_params.h")),
    ("schedule.cuh", include_str!("../../../kernels/templates/schedule.cuh")),
    ("dq_semaphore.cuh", include_str!("../../../kernels/templates/dq_semaphore.cuh")),
    ("bwd_mainloop_sm80.cuh", include_str!("../../../kernels/templates/bwd_mainloop_sm80.cuh")),
    ("bwd_mainloop_sm90.cuh", include_str!("../../../kernels/templates/bwd_mainloop_sm90.cuh")),
    ("bwd_preprocess.cuh", include_str!("../../../kernels/templates/bwd_preprocess.cuh")),
    ("bwd_postprocess.cuh", include_str!("../../../kernels/templates/bwd_postprocess.cuh")),
    ("fwd_reference.cuh", include_str!("../../../kernels/templates/fwd_reference.cuh")),
    ("harness.cu", include_str!("../../../kernels/templates/harness.cu")),
];

/// A set of CUDA templates.
///
/// Syntax (chosen so that no C++ or inline PTX construct collides with it): `${ name }` for values,
/// `/*% if x %*/ ... /*% endif %*/` for blocks, `//% if x` for line statements, `/*# ... #*/` for template
/// comments. Undefined variables are errors (strict mode), so a template that names a value the generator
/// does not provide fails to render instead of emitting an empty string into CUDA code.
#[derive(Debug, Clone)]
pub struct Templates {
    sources: BTreeMap<String, String>,
}

impl Templates {
    /// The templates compiled into this crate from `kernels/templates/`.
    pub fn embedded() -> Self {
        Templates { sources: EMBEDDED.iter().map(|(n, s)| (n.to_string(), s.to_string())).collect() }
    }

    /// Templates handed in by the caller (e.g. read from a directory by the CLI, for editing without
    /// rebuilding). Every name in [`TEMPLATE_NAMES`] must be present.
    pub fn from_sources<I, N, S>(sources: I) -> Result<Self, CodegenError>
    where
        I: IntoIterator<Item = (N, S)>,
        N: Into<String>,
        S: Into<String>,
    {
        let sources: BTreeMap<String, String> = sources.into_iter().map(|(n, s)| (n.into(), s.into())).collect();
        for name in TEMPLATE_NAMES {
            if !sources.contains_key(name) {
                return Err(CodegenError::MissingTemplate { name: name.to_string() });
            }
        }
        Ok(Templates { sources })
    }

    /// Renders template `name` with the given context.
    pub(crate) fn render(&self, name: &str, context: &Value) -> Result<String, CodegenError> {
        let source = self.sources.get(name).ok_or_else(|| CodegenError::MissingTemplate { name: name.to_string() })?;
        let wrap = |source: minijinja::Error| CodegenError::Template { name: name.to_string(), source };
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_syntax(syntax());
        env.add_template(name, source).map_err(wrap)?;
        env.get_template(name).map_err(wrap)?.render(context).map_err(wrap)
    }
}

fn syntax() -> SyntaxConfig {
    SyntaxConfig::builder()
        .variable_delimiters("${", "}")
        .block_delimiters("/*%", "%*/")
        .comment_delimiters("/*#", "#*/")
        .line_statement_prefix("//%")
        .keep_trailing_newline(true)
        .build()
        .expect("the template syntax is a valid constant configuration")
}
