"""Children that are sent Ctrl-C (SIGINT) in a test start with SIGINT's default action, as under a terminal.

A process started in the background of a non-interactive shell (`cmd &` in a CI script) ignores SIGINT, and its
children inherit that: Python then installs no KeyboardInterrupt handler, and a test's SIGINT is lost. Pass
`preexec_fn=default_sigint` to the Popen of a child the test interrupts."""
import signal


def default_sigint() -> None:
    """In the child, before exec: SIGINT back to its default action (Python then raises KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
