// The page's Markdown renderer (src/server/web/markdown.js): the subset renders, and nothing
// the model writes becomes markup of its own. Usage: node markdown_test.mjs
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { check, finish } from "./checks.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const md = require(path.join(here, "../../src/server/web/markdown.js"));

// Every tag in the output is one the renderer writes, with no attribute but a link's href/rel/target.
const ALLOWED = /^<\/?(p|br|h3|h4|h5|ul|ol|li|pre|code|strong|em|a)( href="https?:\/\/[^"<>]*" rel="noopener noreferrer nofollow" target="_blank")?>$/;
function assertOnlyOwnTags(html, input) {
  for (const tag of html.match(/<[^>]*>/g) || []) assert.match(tag, ALLOWED, `tag ${tag} from ${JSON.stringify(input)}`);
}

await check("subset renders", () => {
  assert.equal(md.render("Hello **bold** and *it* and `x<y`"), "<p>Hello <strong>bold</strong> and <em>it</em> and <code>x&lt;y</code></p>");
  assert.equal(md.render("# Title\n\n- a\n- b\n\n1. one\n2. two"),
    "<h3>Title</h3><ul><li>a</li><li>b</li></ul><ol><li>one</li><li>two</li></ol>");
  assert.equal(md.render("```js\nif (a < b) **x**\n```"), "<pre><code>if (a &lt; b) **x**</code></pre>");
  assert.equal(md.render("line one\nline two"), "<p>line one<br>line two</p>");
  assert.equal(md.render("[site](https://example.com/a?b=1&c=2)"),
    '<p><a href="https://example.com/a?b=1&amp;c=2" rel="noopener noreferrer nofollow" target="_blank">site</a></p>');
  assert.equal(md.render("snake_case_name stays"), "<p>snake_case_name stays</p>");
});

await check("raw HTML and hostile links stay text", () => {
  const attacks = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    '[x](https://a.example/" onmouseover="alert(1))',
    "**<b onclick=alert(1)>**",
    "`<iframe>`",
    "```\n</code></pre><script>x</script>\n```",
    "<a href=\"https://x\">y</a>",
    "&lt;script&gt; already escaped",
    "\u0000" + "0\u0000 placeholder forgery `c`",
    "# <svg onload=alert(1)>",
    "- [a](https://e.example)<style>",
  ];
  for (const input of attacks) {
    const html = md.render(input);
    assertOnlyOwnTags(html, input);
    assert.ok(!/<script|<img|<iframe|<svg|<style|href="javascript/i.test(html), html);
  }
  assert.equal(md.render("[x](javascript:alert(1))"), "<p>[x](javascript:alert(1))</p>");
  assert.equal(md.render("&lt;"), "<p>&amp;lt;</p>");
});

await check("random text never yields a foreign tag", () => {
  const alphabet = ["<", ">", "\"", "'", "&", "*", "_", "`", "[", "]", "(", ")", "#", "-", "1.", "\n", " ", "a", "https://x.example/",
                    "javascript:", "<script>", "```", "on=", "/"];
  let seed = 12345;
  const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  for (let i = 0; i < 3000; i++) {
    let s = "";
    const len = 1 + rand(40);
    for (let k = 0; k < len; k++) s += alphabet[rand(alphabet.length)];
    const html = md.render(s);
    assertOnlyOwnTags(html, s);
  }
});

finish("markdown checks", "src/server/web/markdown.js");
