#!/usr/bin/env bash
# `ringlm pull ORG/NAME` against a loopback imitation of the Hugging Face Hub (fake_hub.py):
# the files land in the HF cache layout that `--model ORG/NAME` reads (blobs named by checksum,
# snapshot symlinks, refs/main) and the model runs from there; a connection dropped at 50 %
# resumes within the run with an HTTP Range request; a pull killed at 50 % resumes from the
# .incomplete file on the next run; every file is verified (sha256 for LFS files, git sha1
# for the rest) and a corrupt one is refused by name and removed. RINGLM_PULL_MB sets the size
# of the large file (default 20; the 2 GB figure of the issue is a manual run).
set -euo pipefail
mkdir -p "$RINGLM_TMP"
cd "$RINGLM_TMP"
fail() { echo "FAIL: $*" >&2; exit 1; }
mb=${RINGLM_PULL_MB:-20}
hub_pid=""
trap '[[ -z "$hub_pid" ]] || kill $hub_pid 2>/dev/null || true' EXIT
start_hub() {  # start_hub [fault flags]: a fresh hub with its own log
  [[ -z "$hub_pid" ]] || { kill $hub_pid 2>/dev/null || true; wait $hub_pid 2>/dev/null || true; }
  rm -f port hub.log
  "$RINGLM_PYTHON" "$RINGLM_SOURCE_DIR/tests/install/fake_hub.py" hub port hub.log "$@" &
  hub_pid=$!
  for _ in $(seq 1 100); do [[ -f port ]] && break; sleep 0.1; done
  [[ -f port ]] || fail "the fake hub did not start"
  endpoint="http://127.0.0.1:$(cat port)"
}

# The repository: a tiny model, plus a large LFS file to interrupt.
rm -rf hub hf1 hf2 hf3
mkdir -p hub/acme
"$RINGLM" make-test-model hub/acme/tiny --preset tiny --seed 4 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
head -c $((mb * 1000 * 1000)) /dev/urandom >hub/acme/tiny/big.bin
big_sha=$(sha256sum hub/acme/tiny/big.bin | cut -d' ' -f1)
half=$((mb * 1000 * 1000 / 2))

# 1. Dropped at 50 %: resumed within the run, from byte $half.
start_hub --drop big.bin
HF_HOME="$RINGLM_TMP/hf1" "$RINGLM" pull acme/tiny --endpoint "$endpoint" >snap.txt 2>pull1.log ||
  { cat pull1.log >&2; fail "pull after a dropped connection"; }
grep -q "big.bin: connection lost at" pull1.log || { cat pull1.log >&2; fail "no resume message"; }
grep -q "range=bytes=$half-" hub.log || { cat hub.log >&2; fail "no Range request from byte $half"; }
repo=hf1/hub/models--acme--tiny
[[ $(cat $repo/refs/main) == 0123456789abcdef0123456789abcdef01234567 ]] || fail "refs/main"
snap=$repo/snapshots/0123456789abcdef0123456789abcdef01234567
[[ $(cat snap.txt) == "$RINGLM_TMP/$snap" ]] || fail "pull printed $(cat snap.txt)"
[[ -L $snap/big.bin && $(readlink $snap/big.bin) == ../../blobs/$big_sha ]] || fail "big.bin is not a link to its blob"
[[ $(sha256sum <$snap/big.bin | cut -d' ' -f1) == "$big_sha" ]] || fail "big.bin differs"
for f in hub/acme/tiny/*; do cmp -s "$f" "$snap/$(basename "$f")" || fail "$(basename "$f") differs after pull"; done
[[ -z $(find $repo -name '*.incomplete') ]] || fail "an .incomplete file is left"
# Non-LFS files are named by their git blob sha1.
cfg_sha1=$("$RINGLM_PYTHON" -c 'import hashlib,sys; d=open(sys.argv[1],"rb").read(); print(hashlib.sha1(b"blob %d\0" % len(d) + d).hexdigest())' hub/acme/tiny/config.json)
[[ $(readlink $snap/config.json) == ../../blobs/$cfg_sha1 ]] || fail "config.json blob name"
# --model acme/tiny reads it.
want=$("$RINGLM" run -m hub/acme/tiny -n 4 -p hi 2>/dev/null)
got=$(HF_HOME="$RINGLM_TMP/hf1" "$RINGLM" run -m acme/tiny -n 4 -p hi 2>/dev/null)
[[ -n "$want" && "$want" == "$got" ]] || fail "run -m acme/tiny: '$got' vs '$want'"
# A second pull finds everything in place and downloads nothing.
: >hub.log
HF_HOME="$RINGLM_TMP/hf1" "$RINGLM" pull acme/tiny --endpoint "$endpoint" >/dev/null 2>pull1b.log
! grep -q "/resolve/\|/cdn/" hub.log || { cat hub.log >&2; fail "a second pull downloaded again"; }

# 2. Killed at 50 %: the next run resumes from the .incomplete file.
start_hub --stall big.bin
HF_HOME="$RINGLM_TMP/hf2" "$RINGLM" pull acme/tiny --endpoint "$endpoint" >/dev/null 2>pull2.log &
pull_pid=$!
part=hf2/hub/models--acme--tiny/blobs/$big_sha.incomplete
for _ in $(seq 1 300); do
  [[ -f $part && $(stat -c %s $part) -ge $half ]] && break
  sleep 0.1
done
[[ -f $part && $(stat -c %s $part) -eq $half ]] || fail "the pull did not stop at 50 % ($(stat -c %s $part 2>/dev/null))"
kill -9 $pull_pid; wait $pull_pid 2>/dev/null || true
: >hub.log
HF_HOME="$RINGLM_TMP/hf2" "$RINGLM" pull acme/tiny --endpoint "$endpoint" >/dev/null 2>pull2b.log ||
  { cat pull2b.log >&2; fail "the resumed pull"; }
grep -q "big.bin: resuming at" pull2b.log || { cat pull2b.log >&2; fail "no 'resuming at'"; }
grep -q "range=bytes=$half-" hub.log || { cat hub.log >&2; fail "the resumed pull did not ask for bytes $half-"; }
[[ $(sha256sum <hf2/hub/models--acme--tiny/blobs/$big_sha | cut -d' ' -f1) == "$big_sha" ]] || fail "resumed file differs"

# 3. A corrupt file is refused by name, and removed.
start_hub --corrupt big.bin
rc=0; HF_HOME="$RINGLM_TMP/hf3" "$RINGLM" pull acme/tiny --endpoint "$endpoint" >/dev/null 2>pull3.log || rc=$?
[[ $rc == 1 ]] || { cat pull3.log >&2; fail "a corrupt download exited $rc"; }
grep -q "error: big.bin: checksum mismatch: the Hub lists sha256 $big_sha" pull3.log || { cat pull3.log >&2; fail "not refused by name"; }
[[ -z $(find hf3 -name "$big_sha*") ]] || fail "the corrupt download was kept"
[[ ! -e hf3/hub/models--acme--tiny/snapshots/0123456789abcdef0123456789abcdef01234567/big.bin ]] || fail "corrupt file linked"
# Errors a user can meet: no such repository; not ORG/NAME.
rc=0; HF_HOME="$RINGLM_TMP/hf3" "$RINGLM" pull acme/nothing --endpoint "$endpoint" 2>pull4.log || rc=$?
[[ $rc == 1 ]] && grep -q "acme/nothing: no such repository" pull4.log || { cat pull4.log >&2; fail "a missing repo"; }
rc=0; "$RINGLM" pull justaname 2>pull5.log || rc=$?
[[ $rc == 1 ]] && grep -q "not a repository id" pull5.log || { cat pull5.log >&2; fail "a bare name"; }
echo "pull checks passed ($mb MB file)"
