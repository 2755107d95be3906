//! `prompts:`: per-model prompt rules and their templates.

use super::*;

pub(super) fn compile_prompt(cx: &mut Ctx, i: usize, p: RawPrompt, base_dir: &Path) -> PromptRule {
    let path = format!("prompts[{i}]");
    if p.match_.trim().is_empty() {
        cx.err(format!("{path}.match"), "empty pattern");
    }
    if p.system_prefix.is_none() && p.template.is_none() {
        cx.err(&path, "a prompt variant needs `system_prefix` or `template`");
    }
    let output = match p.output.as_deref() {
        None | Some("text") => TemplateOutput::Text,
        Some("messages") => TemplateOutput::Messages,
        Some(other) => {
            cx.err(format!("{path}.output"), format!("unknown output `{other}`: expected `text` or `messages`"));
            TemplateOutput::Text
        }
    };
    if p.output.is_some() && p.template.is_none() {
        cx.err(format!("{path}.output"), "`output` applies to a `template`, and this variant has none");
    }
    let mut template_source = None;
    let template = p.template.map(|t| {
        let file = base_dir.join(&t);
        match std::fs::read_to_string(&file) {
            Ok(source) => match super::template::check_template(&source, output) {
                Ok(()) => template_source = Some(source),
                Err(e) => cx.err(format!("{path}.template"), format!("template {}: {e}", file.display())),
            },
            Err(_) => cx.err(format!("{path}.template"), format!("file not found: {}", file.display())),
        }
        file
    });
    PromptRule {
        pattern: p.match_,
        version: p.version,
        system_prefix: p.system_prefix,
        template,
        template_source,
        template_name: None,
        output,
    }
}
