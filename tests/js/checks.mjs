// The small runner the openai client tests share: named async checks, each reported as
// PASS/FAIL with its time (a failure does not stop the others), and a summary line whose
// exit status is non-zero when any check failed.
const results = [];

export async function check(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    console.log(`PASS ${name} (${Date.now() - t0} ms)`);
  } catch (err) {
    results.push({ name, ok: false });
    console.log(`FAIL ${name}: ${err?.stack || err}`);
  }
}

// Prints "<passed>/<all> <what> passed (<where>)" and exits 1 if any check failed.
export function finish(what, where) {
  const failed = results.filter((r) => !r.ok);
  console.log(`${results.length - failed.length}/${results.length} ${what} passed (${where})`);
  process.exit(failed.length ? 1 : 0);
}
