// How a run is said in words and shown in colour, the same on every page.

const FALLBACK_WORDS = {
  MISSING_REQUIRED_CONTEXT: "the question lacked context",
  INSUFFICIENT_EVIDENCE: "not enough evidence",
  EVIDENCE_VALIDATION_FAILED: "its evidence did not check out",
  SEMANTIC_UNSUPPORTED: "the judge found it unsupported",
  SEMANTIC_UNAVAILABLE: "the judge was unavailable",
};

// {words, tone}: tone is one of success, fallback, failed, cancelled, running.
export function outcome(run) {
  if (run.status === "RUNNING" || !run.release_outcome) {
    return { words: "Running", tone: "running" };
  }
  const reason = run.termination_reason ? ` (${run.termination_state}: ${run.termination_reason})` : "";
  switch (run.release_outcome) {
    case "SUCCESS":
      return { words: "Published an answer", tone: "success" };
    case "FALLBACK":
      return {
        words: `Safe fallback: ${FALLBACK_WORDS[run.fallback_type] || run.fallback_type}`,
        tone: "fallback",
      };
    case "CANCELLED":
      return { words: `Cancelled (${run.termination_reason})`, tone: "cancelled" };
    default:
      return { words: `Failed${reason}`, tone: "failed" };
  }
}

export function duration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

export function utc(text) {
  return text ? text.replace("T", " ").slice(0, 19) : "—";
}

// A model's text as the page shows it: every character no reader sees — controls but tab and
// newline, format characters (bidi overrides, zero-width characters, tags, the soft hyphen),
// separators, private-use and unassigned code points, default-ignorables — written as its code
// point, as cli/terminal_text.py spells it for the command line. A bidi override cannot reorder what
// follows it, nor a hidden word hide.
const HIDDEN = /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/gu;

export function shown(text) {
  return String(text ?? "").replace(HIDDEN, (char) => {
    if (char === "\t" || char === "\n") return char;
    const point = char.codePointAt(0);
    return point <= 0xffff
      ? `\\u${point.toString(16).padStart(4, "0")}`
      : `\\U${point.toString(16).padStart(8, "0")}`;
  });
}
