// A small Markdown subset for the chat replies, safe by construction: the text is
// HTML-escaped first (& < > " '), and only then are the few constructs below turned into tags
// this file writes itself, so nothing the model writes can become markup of its own (no raw
// HTML, no attributes, no event handlers, no javascript: links).
//   ```fenced code```  `inline code`  # ## ### headings  **bold**  *italic* / _italic_
//   - or * bullet lists  1. numbered lists  [text](http(s)://url)  paragraphs, line breaks
// Loaded by the page as a plain script (window.ringlmMarkdown) and by node's tests (require).
'use strict';

const ringlmMarkdown = (() => {
  const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
  const escape = (s) => s.replace(/[&<>"']/g, (c) => ESC[c]);

  // Inline constructs on escaped text. Code spans are cut out first so their text stays
  // literal; \u0000 cannot occur in escaped model text's placeholders (it is removed up front).
  function inline(text) {
    const codes = [];
    let s = text.replace(/`([^`\n]+)`/g, (_, code) => {
      codes.push('<code>' + code + '</code>');
      return '\u0000' + (codes.length - 1) + '\u0000';
    });
    s = s.replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g,
      (_, label, url) => '<a href="' + url + '" rel="noopener noreferrer nofollow" target="_blank">' + label + '</a>');
    s = s.replace(/\*\*([^*\n]+)\*\*/g, '<strong>$1</strong>');
    s = s.replace(/(^|[^*\w])\*([^*\s][^*\n]*?)\*(?![*\w])/g, '$1<em>$2</em>');
    s = s.replace(/(^|[^_\w])_([^_\s][^_\n]*?)_(?![_\w])/g, '$1<em>$2</em>');
    return s.replace(/\u0000(\d+)\u0000/g, (_, i) => codes[Number(i)]);
  }

  // Block structure of escaped text without fences: headings, lists, paragraphs.
  function blocks(text) {
    const out = [];
    let list = null;   // 'ul' | 'ol' while inside a list
    let para = [];
    const flushPara = () => {
      if (para.length) out.push('<p>' + para.map(inline).join('<br>') + '</p>');
      para = [];
    };
    const closeList = () => {
      if (list) out.push('</' + list + '>');
      list = null;
    };
    for (const line of text.split('\n')) {
      let m;
      if ((m = /^(#{1,3}) +(.*)$/.exec(line))) {
        flushPara(); closeList();
        const level = m[1].length + 2;  // # -> h3: the page's own headings stay above replies
        out.push('<h' + level + '>' + inline(m[2]) + '</h' + level + '>');
      } else if ((m = /^\s*[-*] +(.*)$/.exec(line)) || (m = /^\s*\d+[.)] +(.*)$/.exec(line))) {
        flushPara();
        const kind = /^\s*\d/.test(line) ? 'ol' : 'ul';
        if (list !== kind) { closeList(); out.push('<' + kind + '>'); list = kind; }
        out.push('<li>' + inline(m[1]) + '</li>');
      } else if (line.trim() === '') {
        flushPara(); closeList();
      } else {
        closeList();
        para.push(line);
      }
    }
    flushPara(); closeList();
    return out.join('');
  }

  // Markdown text -> HTML string (for element.innerHTML). An unclosed fence (a reply still
  // streaming) runs to the end.
  function render(markdown) {
    const text = escape(String(markdown).replace(/\u0000/g, ''));
    const parts = text.split(/^```[^\n]*$/m);
    let html = '';
    parts.forEach((part, i) => {
      if (i % 2 === 1) html += '<pre><code>' + part.replace(/^\n/, '').replace(/\n$/, '') + '</code></pre>';
      else html += blocks(part);
    });
    return html;
  }

  return { render, escape };
})();

if (typeof module !== 'undefined' && module.exports) module.exports = ringlmMarkdown;
