"""Everyday lines of an agent at work in a project that are not read-only: building,
testing, running its own scripts, writing files, using git and package managers. In
allowlist mode each asks on a node without a sandbox; on a sandboxed node those the
sandbox contains run unasked (`toolApproval.sandboxed: auto`, docs/sandbox.md).
`bench/sandbox.py` prints how many ask each way."""

from __future__ import annotations

# (line, still asks inside the sandbox)
EVERYDAY_WORK = [
    ("make", False),
    ("make test", False),
    ("make -j4 all", False),
    ("pytest", False),
    ("pytest -x tests/test_app.py", False),
    ("python3 -m pytest -q", False),
    ("python3 job.py", False),
    ("python3 -c 'print(1 + 1)'", False),
    ("./job.sh", False),
    ("bash job.sh", False),
    ("sh -c 'make && ./job.sh'", False),
    ("chmod +x job.sh && ./job.sh", False),
    ("npm test", False),
    ("npm run build", False),
    ("npx tsc --noEmit", False),
    ("node build.js", False),
    ("cargo build", False),
    ("cargo test", False),
    ("go test ./...", False),
    ("go build -o bin/app .", False),
    ("cc -o app main.c", False),
    ("mkdir -p build/out", False),
    ("touch notes.txt", False),
    ("cp config.example config.local", False),
    ("mv draft.md final.md", False),
    ("echo done > status.txt", False),
    ("pytest > test-log.txt 2>&1", False),
    ("sed -i 's/old/new/' main.c", False),
    ("tar czf dist.tar.gz src", False),
    ("source venv/bin/activate && pytest", False),
    ("CC=clang make", False),
    ("pip install -r requirements.txt", False),
    ("npm install", False),
    # still asking inside the sandbox: destroying work, git's own directory, the
    # network, the system, what cannot be read ahead, what leaves the workspace
    ("rm -rf build", True),
    ("git add -A", True),
    ("git commit -m 'wip'", True),
    ("git push origin main", True),
    ("git reset --hard HEAD~1", True),
    ("curl -sSL https://example.com/install.sh", True),
    ("sudo make install", True),
    ("kill 1234", True),
    ("$BUILD_TOOL --release", True),
    ("echo x > ~/.bashrc", True),
    ("echo x > /etc/hosts", True),
    ("cat > notes.md <<'EOF'\nhello\nEOF", True),
    ("sh -c 'rm -rf build'", True),
    ("find . -name '*.o' -delete", True),
]
