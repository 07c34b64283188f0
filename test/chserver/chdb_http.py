"""ClickHouse's HTTP interface, as much of it as Strata's store speaks, over
chdb: the current ClickHouse engine in-process (PyPI's chdb-core), for the
store's contract tests. It is a test fixture, not a server to deploy.

Usage: python chdb_http.py DATA_DIR  (prints "listening PORT" on stdout)

What it serves, on 127.0.0.1 and a free port, one request at a time:
  - POST or GET / with the statement in the body, in the `query` parameter,
    or in both (parameter first, then the body, as ClickHouse joins them);
  - `database` sets the current database for that request;
  - an INSERT whose `query` parameter ends in FORMAT F and whose body is the
    data: the body is written to a file and inserted FROM INFILE;
  - answers in the statement's FORMAT, TabSeparated by default; errors as
    HTTP 500 with ClickHouse's "Code: N. DB::Exception: ..." text.
Basic-auth credentials and other parameters are ignored.
"""
import http.server
import os
import re
import sys
import tempfile
import threading
import urllib.parse

import chdb.session

INSERT_FORMAT = re.compile(r"^(\s*INSERT\s+INTO\s.*?)\s+FORMAT\s+(\w+)\s*$", re.I | re.S)


class Handler(http.server.BaseHTTPRequestHandler):
    session = None
    lock = threading.Lock()
    spool = None

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.serve(b"")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.serve(self.rfile.read(n) if n else self.read_chunked())

    def read_chunked(self):
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return b""
        out = bytearray()
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return bytes(out)
            out += self.rfile.read(size)
            self.rfile.readline()

    def serve(self, body):
        # Statements stay bytes, as ClickHouse reads them: a string literal
        # may hold any bytes, valid UTF-8 or not (latin-1 maps each
        # percent-decoded byte of a parameter to one character and back).
        params = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query, encoding="latin-1")
        query = params.get("query", [""])[0]
        database = params.get("database", [""])[0]
        infile = None
        m = INSERT_FORMAT.match(query) if query and body else None
        if m:
            fd, infile = tempfile.mkstemp(dir=Handler.spool)
            with os.fdopen(fd, "wb") as f:
                f.write(body)
            stmt = ("%s FROM INFILE '%s' FORMAT %s" % (m.group(1), infile, m.group(2))).encode("latin-1")
        elif query and body:
            stmt = query.encode("latin-1") + b"\n" + body
        else:
            stmt = query.encode("latin-1") or body
        try:
            with Handler.lock:
                Handler.session.query("USE " + (database or "default"))
                out = Handler.session.query(stmt, "TabSeparated").bytes()
            code, payload = 200, out
        except Exception as e:  # chdb's errors carry ClickHouse's text
            text = str(e)
            if not text.startswith("Code:"):
                text = "Code: 1000. DB::Exception: " + text
            code, payload = 500, text.encode()
        finally:
            if infile:
                os.unlink(infile)
        self.send_response(code)
        self.send_header("Content-Type", "application/octet-stream" if code == 200 else "text/plain")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def main():
    data = sys.argv[1]
    os.makedirs(data, exist_ok=True)
    Handler.spool = os.path.join(data, "spool")
    os.makedirs(Handler.spool, exist_ok=True)
    Handler.session = chdb.session.Session(os.path.join(data, "db"))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print("listening %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
