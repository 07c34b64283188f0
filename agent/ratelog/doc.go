// Package ratelog keeps a flood of one log line from drowning everything
// else: Handler wraps a slog.Handler and passes each distinct message (its
// level and text, attributes aside) at most Burst times per Interval. The
// lines it holds back are counted, and the next line of that message that
// passes carries the count as suppressed=N; when no such line comes, Run
// (Flush) writes one with the count once the window has ended. So nothing
// goes unsaid: the log says how often it happened, the metrics say exactly
// (Handler.Suppressed).
//
// The agent wraps its one logger at start, so every per-event warning
// (a refused session, a block the kernel's map has no room for, a record
// the collector refused) is limited by the same rule without each call
// site counting for itself. Records below Options.Min (debug, by default)
// are passed unlimited: an operator who asks for debug gets all of it.
//
// What callers must know: the key is the message text, so a message must be
// a constant and the variable parts attributes (slog's own convention);
// loggers derived with With or WithGroup share their parent's limits.
package ratelog
