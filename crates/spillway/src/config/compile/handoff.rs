//! `handoff:` and `escalation:`: where a request goes when no model can answer it.

use super::*;

pub(super) fn compile_escalation(
    cx: &mut Ctx,
    rules: Vec<RawEscalation>,
    cascades: &IndexMap<String, CascadeConfig>,
) -> Vec<EscalationRule> {
    let mut escalation = Vec::new();
    for (i, e) in rules.into_iter().enumerate() {
        let path = format!("escalation[{i}]");
        for (field, name) in [("from", &e.from), ("to", &e.to)] {
            match cascades.get(name.as_str()) {
                None => cx.err(format!("{path}.{field}"), format!("unknown cascade `{name}`")),
                Some(c) if c.kind != CascadeKind::Chat => cx.err(
                    format!("{path}.{field}"),
                    format!("`{name}` is an embedding cascade: escalation is for chat"),
                ),
                Some(_) => {}
            }
        }
        if e.when != "frustrated" {
            cx.err(format!("{path}.when"), format!("unknown condition `{}`: expected `frustrated`", e.when));
        }
        escalation.push(EscalationRule { from: e.from, to: e.to });
    }
    escalation
}

pub(super) fn compile_handoff(cx: &mut Ctx, h: RawHandoff) -> HandoffConfig {
    HandoffConfig {
        reply: h.reply.unwrap_or_else(|| {
            "Your request has been passed to an operator. You will get an answer shortly.".to_string()
        }),
        webhook: h.webhook.map(|u| {
            check_url(cx, "handoff.webhook", &u);
            Secret::new(u)
        }),
        retention: cx.duration("handoff.retention", h.retention.as_ref(), Duration::from_secs(30 * 86_400)),
    }
}
