// statevcs serve: the history browser's front end. Plain JavaScript, no build step, no
// dependency. Every string read from the repository is put in the page as a text node (DOM
// `append`/`textContent`), never as markup; the server's Content-Security-Policy requires Trusted
// Types, so an assignment of a string to innerHTML would throw. Control, bidi and invisible
// characters are shown as escapes (\x1b, \u202e), as the command line shows them.
"use strict";

(() => {
  const main = document.getElementById("main");
  const live = document.getElementById("live");
  const searchForm = document.getElementById("search-form");
  const searchInput = document.getElementById("search-input");

  const PAGE = 100;
  const MESSAGES = 50;
  const POLL_MS = 3000;
  const state = { info: null, version: null, view: null, token: null, generation: 0 };

  // --- text --------------------------------------------------------------------------------

  // As statevcs/cli/safety.py: C0 (but \t and \n), DEL, C1, line and paragraph separators, bidi
  // formatting, invisible format characters, tag characters, lone surrogates.
  const UNSAFE =
    /[\0-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u180e\u200b\u2060-\u2064\u206a-\u206f\ufeff\ufff9-\ufffb\u{e0000}-\u{e007f}\ud800-\udfff]/gu;
  const BREAKS = /[\t\n]/g;

  function escapeChar(ch) {
    const code = ch.codePointAt(0);
    if (code < 0x100) return "\\x" + code.toString(16).padStart(2, "0");
    if (code < 0x10000) return "\\u" + code.toString(16).padStart(4, "0");
    return "\\U" + code.toString(16).padStart(8, "0");
  }

  // `value` as text that shows every control and formatting character (multi-line keeps \n, \t).
  function visible(value, multiline) {
    const text = typeof value === "string" ? value : String(value);
    const shown = text.replace(UNSAFE, escapeChar);
    return multiline ? shown : shown.replace(BREAKS, escapeChar);
  }

  function firstLine(value) {
    const text = typeof value === "string" ? value : String(value);
    return visible(text.split("\n", 1)[0], false);
  }

  // --- elements ----------------------------------------------------------------------------

  // A new element: `props` sets class, id, our own "#/" links and listeners; every child string
  // becomes a text node.
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "href") {
        if (!value.startsWith("#/")) throw new Error("only the browser's own links");
        node.setAttribute("href", value);
      } else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function enc(value) {
    return encodeURIComponent(value);
  }

  function commitLink(id, text) {
    return el("a", { href: "#/commit/" + enc(id), class: "commit-link mono" }, text || id.slice(0, 12));
  }

  function labels(list) {
    return (list || []).map((label) =>
      el(
        "span",
        { class: "label label-" + (["head", "branch", "tag"].includes(label.kind) ? label.kind : "ref") },
        label.kind === "tag" ? "tag: " + visible(label.name) : visible(label.name),
      ),
    );
  }

  function when(iso) {
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? visible(iso) : date.toISOString().replace("T", " ").slice(0, 19) + "Z";
  }

  // --- the API ---------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, message, kind) {
      super(message);
      this.status = status;
      this.kind = kind || "Error";
    }
  }

  async function api(path, params) {
    const url = new URL(path, location.origin);
    for (const [key, value] of Object.entries(params || {})) {
      if (value !== undefined && value !== null) url.searchParams.set(key, String(value));
    }
    return answer(await fetch(url, { headers: { accept: "application/json" } }));
  }

  async function post(path, body) {
    const response = await fetch(new URL(path, location.origin), {
      method: "POST",
      headers: {
        accept: "application/json",
        "content-type": "application/json",
        "x-statevcs-token": state.token || "",
      },
      body: JSON.stringify(body),
    });
    return answer(response);
  }

  async function answer(response) {
    let data;
    try {
      data = await response.json();
    } catch (_) {
      throw new ApiError(response.status, "the server answered " + response.status + " without JSON");
    }
    if (!response.ok) {
      const error = (data && data.error) || {};
      throw new ApiError(response.status, error.message || "request failed", error.type);
    }
    return data;
  }

  // --- values ------------------------------------------------------------------------------

  function isMarker(value, name) {
    return value && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length === 1 && name in value;
  }

  function bytesLength(base64) {
    const text = String(base64);
    return Math.floor((text.length * 3) / 4) - (text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0);
  }

  function scalar(value) {
    if (value === null) return el("span", { class: "v-null" }, "null");
    if (typeof value === "string") return el("span", { class: "v-str" }, '"' + visible(value, false) + '"');
    if (typeof value === "number" || typeof value === "boolean") return el("span", { class: "v-" + typeof value }, String(value));
    if (isMarker(value, "__bytes__")) return el("span", { class: "placeholder" }, "‹binary, " + bytesLength(value.__bytes__) + " bytes›");
    if (isMarker(value, "__float__")) return el("span", { class: "v-number" }, visible(value.__float__));
    return null;
  }

  const TREE_CHILDREN = 500;

  // A value as a collapsible tree; a node's children are built when it is first opened.
  function tree(value, label, open) {
    const key = label === undefined ? null : el("span", { class: "key" }, visible(label, false));
    const leaf = scalar(value);
    if (leaf !== null) return el("div", { class: "leaf" }, key, key ? ": " : null, leaf);
    let entries;
    if (isMarker(value, "__map__") && Array.isArray(value.__map__)) {
      // Only string keys: an object kept in its committed order (keys like "10" included).
      const named = value.__map__.every((pair) => Array.isArray(pair) && typeof pair[0] === "string");
      entries = value.__map__.map((pair, i) => [Array.isArray(pair) ? (named ? pair[0] : JSON.stringify(pair[0])) : String(i), Array.isArray(pair) ? pair[1] : pair]);
    } else if (Array.isArray(value)) {
      entries = value.map((item, i) => [String(i), item]);
    } else {
      entries = Object.entries(value);
    }
    const count = Array.isArray(value) ? "[" + entries.length + "]" : "{" + entries.length + "}";
    const summary = el("summary", {}, key, key ? " " : null, el("span", { class: "count" }, count));
    const details = el("details", { class: "tree" }, summary);
    let filled = false;
    const fill = () => {
      if (filled) return;
      filled = true;
      const list = el("ul");
      for (const [k, v] of entries.slice(0, TREE_CHILDREN)) list.append(el("li", {}, tree(v, k, false)));
      if (entries.length > TREE_CHILDREN) list.append(el("li", { class: "more" }, "… " + (entries.length - TREE_CHILDREN) + " more"));
      details.append(list);
    };
    details.addEventListener("toggle", () => details.open && fill());
    if (open) {
      details.open = true;
      fill();
    }
    return details;
  }

  // --- messages ----------------------------------------------------------------------------

  const ROLES = ["user", "assistant", "system", "tool", "human", "ai", "developer"];

  function fold(title, body) {
    const details = el("details", { class: "fold" }, el("summary", {}, title));
    let filled = false;
    details.addEventListener("toggle", () => {
      if (!details.open || filled) return;
      filled = true;
      if (typeof body === "function") details.append(body());
      else details.append(typeof body === "string" ? el("pre", { class: "text" }, visible(body, true)) : contentParts(body, true));
    });
    return details;
  }

  function placeholder(kind, value) {
    let detail = "";
    if (value && typeof value === "object") {
      if (typeof value.format === "string") detail = " " + visible(value.format);
      const source = value.source && typeof value.source === "object" ? value.source : value;
      if (isMarker(source.bytes, "__bytes__")) detail += ", " + bytesLength(source.bytes.__bytes__) + " bytes";
    }
    return el("div", { class: "placeholder" }, "‹" + kind + detail + "›");
  }

  function toolName(value) {
    return value && typeof value.name === "string" ? visible(value.name) : "?";
  }

  function part(item) {
    if (typeof item === "string") return el("pre", { class: "text" }, visible(item, true));
    if (item === null || typeof item !== "object" || Array.isArray(item)) return tree(item);
    const type = typeof item.type === "string" ? item.type : null;
    if (typeof item.text === "string" && (type === null || type === "text" || type === "input_text" || type === "output_text")) {
      return el("pre", { class: "text" }, visible(item.text, true));
    }
    if (item.toolUse) return fold("tool call: " + toolName(item.toolUse), item.toolUse.input ?? item.toolUse);
    if (item.toolResult) {
      const status = typeof item.toolResult.status === "string" ? " (" + visible(item.toolResult.status) + ")" : "";
      return fold("tool result" + status, item.toolResult.content ?? item.toolResult);
    }
    if (["tool_use", "function_call", "tool_call"].includes(type)) return fold("tool call: " + toolName(item), item.input ?? item.arguments ?? item);
    if (["tool_result", "function_call_output"].includes(type)) return fold("tool result", item.content ?? item.output ?? item);
    if (item.image || type === "image" || type === "image_url" || type === "input_image") return placeholder("image", item.image || item);
    if (item.document || type === "file" || type === "input_file") return placeholder("document", item.document || item);
    if (item.video || item.audio || isMarker(item, "__bytes__")) return placeholder("binary", item.video || item.audio || item);
    if (item.reasoningContent || type === "reasoning" || type === "thinking") return fold("reasoning", item.reasoningContent ?? item.thinking ?? item);
    return tree(item, undefined, true);
  }

  function contentParts(content, open) {
    if (typeof content === "string") return el("pre", { class: "text" }, visible(content, true));
    if (Array.isArray(content)) return el("div", { class: "parts" }, content.map(part));
    if (content === undefined) return null;
    return tree(content, undefined, open);
  }

  function message(msg, position) {
    if (msg === null || typeof msg !== "object" || Array.isArray(msg)) {
      return el("article", { class: "msg role-other", "data-position": position }, el("header", {}, el("span", { class: "pos" }, "#" + position)), tree(msg, undefined, true));
    }
    const role = typeof msg.role === "string" ? msg.role : typeof msg.type === "string" ? msg.type : "message";
    const roleClass = ROLES.includes(role) ? role : "other";
    const body = [];
    const toolish = role === "tool" || role === "function";
    if (toolish) body.push(fold("tool result" + (typeof msg.name === "string" ? ": " + visible(msg.name) : ""), msg.content));
    else body.push(contentParts(msg.content, true));
    for (const call of Array.isArray(msg.tool_calls) ? msg.tool_calls : []) {
      const fn = call && typeof call === "object" && call.function && typeof call.function === "object" ? call.function : call;
      body.push(fold("tool call: " + toolName(fn), fn && (fn.arguments ?? fn.args) !== undefined ? fn.arguments ?? fn.args : call));
    }
    return el(
      "article",
      { class: "msg role-" + roleClass, "data-position": position },
      el("header", {}, el("span", { class: "role" }, visible(role)), el("span", { class: "pos" }, "#" + position)),
      body,
      fold("raw", () => tree(msg, undefined, true)),
    );
  }

  // --- views -------------------------------------------------------------------------------

  function show(...nodes) {
    main.replaceChildren(...nodes.flat().filter((n) => n));
  }

  function moreButton(label, load) {
    const button = el("button", { class: "more", type: "button" }, label);
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        await load(button);
      } catch (error) {
        button.replaceWith(errorBox(error));
      }
    });
    return button;
  }

  function errorBox(error) {
    const status = error instanceof ApiError ? error.status : 0;
    const title = status === 404 ? "Not found" : status === 400 ? "Refused" : "Error";
    return el(
      "section",
      { class: "error", role: "alert" },
      el("h2", {}, title),
      el("p", { class: "error-message" }, visible(error.message || String(error), true)),
      status ? el("p", { class: "error-status" }, "HTTP " + status + (error.kind ? " · " + visible(error.kind) : "")) : null,
      el("p", {}, el("a", { href: "#/" }, "Back to the graph")),
    );
  }

  function graphRow(row, selection) {
    const lanes = [];
    let run = null;
    for (const [char, lane] of row.graph) {
      const cls = char === "*" ? "node" : lane === null ? "" : "lane-" + (Number(lane) % 12);
      if (run && run.cls === cls) run.text += char;
      else lanes.push((run = { cls, text: char }));
    }
    const graph = el("td", { class: "graph" }, lanes.map((r) => el("span", { class: r.cls || null }, r.text)));
    const commit = row.commit;
    if (!commit) return el("tr", { class: "connector-row" }, el("td"), graph, el("td", { colspan: 4 }));
    const box = el("input", { type: "checkbox", class: "pick", "aria-label": "select " + commit.short_id, "data-commit": commit.id });
    box.addEventListener("change", () => selection.toggle(commit.id, Date.parse(commit.timestamp), box));
    return el(
      "tr",
      { class: "commit-row", "data-commit": commit.id },
      el("td", { class: "select" }, box),
      graph,
      el("td", { class: "id" }, commitLink(commit.id, commit.short_id)),
      el("td", { class: "subject" }, labels(commit.labels), el("span", { class: "message" }, firstLine(commit.message))),
      el("td", { class: "author" }, visible(commit.author)),
      el("td", { class: "date" }, when(commit.timestamp)),
    );
  }

  async function graphView() {
    const first = await api("/api/graph", { offset: 0, limit: PAGE });
    state.version = first.version;
    const diffButton = el("button", { id: "diff-selected", type: "button", disabled: true }, "Diff selected");
    const picked = [];
    const selection = {
      toggle(id, time, box) {
        const at = picked.findIndex((p) => p.id === id);
        if (box.checked && at < 0) {
          picked.push({ id, time, box });
          if (picked.length > 2) {
            const dropped = picked.shift();
            dropped.box.checked = false;
          }
        } else if (!box.checked && at >= 0) picked.splice(at, 1);
        diffButton.disabled = picked.length !== 2;
        diffButton.textContent = picked.length === 2 ? "Diff selected (2)" : "Diff selected (pick two)";
      },
    };
    diffButton.textContent = "Diff selected (pick two)";
    diffButton.addEventListener("click", () => {
      if (picked.length !== 2) return;
      // The older is A.
      const [x, y] = picked;
      const [a, b] = x.time <= y.time ? [x.id, y.id] : [y.id, x.id];
      location.hash = "#/diff/" + enc(a) + "/" + enc(b);
    });
    const body = el("tbody");
    const table = el("table", { id: "graph", class: "graph-table" }, body);
    const append = (page) => page.rows.forEach((row) => body.append(graphRow(row, selection)));
    append(first);
    const footer = el("div", { class: "footer" });
    const addMore = (next) => {
      if (next === null) return;
      footer.append(
        moreButton("Load more commits", async (button) => {
          const page = await api("/api/graph", { offset: next, limit: PAGE });
          append(page);
          button.remove();
          addMore(page.next_offset);
        }),
      );
    };
    addMore(first.next_offset);
    show(
      el("h1", {}, "History"),
      el(
        "p",
        { class: "summary" },
        first.commit_count + " commits. Click a commit to open it; tick two to diff them.",
      ),
      el("div", { class: "toolbar" }, diffButton),
      first.commit_count ? table : el("p", { class: "empty" }, "No commits yet."),
      footer,
    );
  }

  function writeForms(commit, refs) {
    const status = el("p", { class: "write-status", role: "status" });
    const run = async (action) => {
      status.textContent = "…";
      try {
        await action();
        status.textContent = "Done.";
        await render();
      } catch (error) {
        status.replaceChildren(visible(error.message || String(error), true));
      }
    };
    const tokenInput = el("input", { type: "password", id: "token", placeholder: "write token", "aria-label": "write token" });
    tokenInput.value = state.token || "";
    tokenInput.addEventListener("change", () => {
      state.token = tokenInput.value;
      sessionStorage.setItem("statevcs-token", state.token);
    });
    const branchName = el("input", { type: "text", id: "new-branch", placeholder: "new branch name" });
    const tagName = el("input", { type: "text", id: "new-tag", placeholder: "new tag name" });
    const resetSelect = el("select", { id: "reset-branch" }, Object.keys(refs.branches).map((name) => el("option", { value: name }, visible(name))));
    const form = (id, label, fields, action) => {
      const node = el("form", { id, class: "write" }, fields, el("button", { type: "submit" }, label));
      node.addEventListener("submit", (event) => {
        event.preventDefault();
        run(action);
      });
      return node;
    };
    return el(
      "section",
      { class: "writes" },
      el("h2", {}, "Change refs"),
      el("label", {}, "Token ", tokenInput),
      form("form-branch", "Create branch here", branchName, () => post("/api/branches", { name: branchName.value, rev: commit.id })),
      form("form-tag", "Create tag here", tagName, () => post("/api/tags", { name: tagName.value, rev: commit.id })),
      form("form-reset", "Reset branch to here", resetSelect, () => post("/api/reset", { branch: resetSelect.value, rev: commit.id })),
      status,
    );
  }

  async function commitView(rev) {
    const data = await api("/api/commit", { rev, offset: 0, limit: MESSAGES });
    const commit = data.commit;
    const chat = el("div", { class: "chat", id: "conversation" });
    const appendMessages = (page) => page.messages.forEach((m) => chat.append(message(m.message, m.position)));
    appendMessages(data);
    const footer = el("div", { class: "footer" });
    const addMore = (next) => {
      if (next === null) return;
      footer.append(
        moreButton("Load more messages", async (button) => {
          const page = await api("/api/commit", { rev: commit.id, offset: next, limit: MESSAGES });
          appendMessages(page);
          button.remove();
          addMore(page.next_offset);
        }),
      );
    };
    addMore(data.next_offset);
    const parents = commit.parents.map((p) => [commitLink(p), " "]);
    const meta = el(
      "dl",
      { class: "meta" },
      el("dt", {}, "commit"), el("dd", { class: "mono", id: "commit-id" }, commit.id),
      el("dt", {}, "parents"), el("dd", {}, parents.length ? parents : "none (a root commit)"),
      el("dt", {}, "author"), el("dd", { id: "commit-author" }, visible(commit.author)),
      el("dt", {}, "date"), el("dd", {}, when(commit.timestamp)),
      el("dt", {}, "kind"), el("dd", {}, visible(data.kind)),
      el("dt", {}, "message"), el("dd", {}, el("pre", { class: "text", id: "commit-message" }, visible(commit.message, true))),
      el("dt", {}, "metadata"), el("dd", { id: "commit-metadata" }, tree(commit.metadata, undefined, true)),
    );
    const links = commit.parents.length
      ? el("p", { class: "toolbar" }, el("a", { href: "#/diff/" + enc(commit.parents[0]) + "/" + enc(commit.id), id: "diff-parent" }, "Diff with parent"))
      : null;
    let writes = null;
    if (state.info && state.info.writable) writes = writeForms(commit, await api("/api/refs"));
    show(
      el("h1", {}, "Commit ", el("span", { class: "mono" }, commit.short_id), " ", labels(commit.labels)),
      meta,
      links,
      el("h2", {}, "Conversation ", el("span", { class: "count" }, "(" + data.message_count + " messages)")),
      chat,
      footer,
      el("h2", {}, "State"),
      el("div", { id: "state" }, tree(data.state, undefined, true)),
      el("h2", {}, "Extras"),
      el("div", { id: "extras" }, tree(data.extras, undefined, false)),
      writes,
    );
  }

  function side(value, render) {
    return value === null || value === undefined ? el("span", { class: "absent" }, "—") : render(value);
  }

  function changeTable(id, changes, keyName) {
    if (!changes.length) return el("p", { class: "empty" }, "No changes.");
    return el(
      "table",
      { class: "diff", id },
      el("thead", {}, el("tr", {}, el("th", {}, keyName), el("th", {}, "change"), el("th", {}, "A"), el("th", {}, "B"))),
      el(
        "tbody",
        {},
        changes.map((c) =>
          el(
            "tr",
            { class: "change change-" + (["added", "removed", "changed"].includes(c.kind) ? c.kind : "other") },
            el("td", { class: "mono" }, visible(String(c.key ?? c.index))),
            el("td", {}, visible(c.kind)),
            el("td", { class: "side side-a" }, side(c.a, (v) => (keyName === "#" ? message(v, c.index) : tree(v, undefined, true)))),
            el("td", { class: "side side-b" }, side(c.b, (v) => (keyName === "#" ? message(v, c.index) : tree(v, undefined, true)))),
          ),
        ),
      ),
    );
  }

  async function diffView(a, b) {
    const data = await api("/api/diff", { a, b, offset: 0, limit: PAGE });
    const m = data.messages;
    const messages = el("div", { id: "diff-messages" }, changeTable("diff-messages-table", m.changes, "#"));
    const footer = el("div", { class: "footer" });
    const addMore = (next) => {
      if (next === null) return;
      footer.append(
        moreButton("Load more changes", async (button) => {
          const page = await api("/api/diff", { a: data.a.commit, b: data.b.commit, offset: next, limit: PAGE });
          messages.append(changeTable("", page.messages.changes, "#"));
          button.remove();
          addMore(page.messages.next_offset);
        }),
      );
    };
    addMore(m.next_offset);
    show(
      el("h1", {}, "Diff"),
      el("p", { class: "sides" }, "A ", commitLink(data.a.commit), " → B ", commitLink(data.b.commit)),
      data.empty ? el("p", { class: "empty", id: "diff-empty" }, "The two commits hold the same snapshot.") : null,
      el("h2", {}, "Messages"),
      el("p", { class: "summary" }, "Common prefix " + m.common_prefix + " messages; A has " + m.a_length + ", B has " + m.b_length + "; " + m.change_count + " positions differ."),
      messages,
      footer,
      el("h2", {}, "State"),
      changeTable("diff-state", data.state, "key"),
      el("h2", {}, "Extras"),
      changeTable("diff-extras", data.extras, "key"),
      (data.order || []).map((o) =>
        el("p", { class: "order", id: "diff-order-" + o.field }, visible(o.field + " key order: " + o.a.join(", ") + " → " + o.b.join(", "))),
      ),
    );
  }

  async function searchView(query) {
    searchInput.value = query || "";
    if (!query) {
      show(el("h1", {}, "Search"), el("p", {}, "Type a word in the search box: every branch's messages are searched."));
      return;
    }
    const data = await api("/api/search", { q: query });
    const results = data.messages.map((match) =>
      el(
        "li",
        { class: "search-result" },
        el("span", { class: "role" }, visible(match.role ?? "message")),
        " ",
        el("span", { class: "snippet" }, visible(match.snippet, false)),
        el(
          "div",
          { class: "introduced" },
          "added by ",
          match.introduced.map((i) => [commitLink(i.commit), " (#" + i.position + ") "]),
        ),
        fold("message", () => message(match.message, match.introduced.length ? match.introduced[0].position : "?")),
      ),
    );
    show(
      el("h1", {}, "Search"),
      el("p", { class: "summary", id: "search-summary" }, data.messages.length + " matching messages in " + data.commits_searched + " commits (" + data.messages_searched + " messages read)."),
      results.length ? el("ol", { class: "results" }, results) : el("p", { class: "empty" }, "Nothing matches."),
    );
  }

  async function compareForm() {
    const refs = await api("/api/refs");
    const names = Object.keys(refs.branches);
    const pick = (id) => el("select", { id }, names.map((n) => el("option", { value: n }, visible(n))));
    const a = pick("compare-a");
    const b = pick("compare-b");
    if (names.length > 1) b.selectedIndex = 1;
    const form = el("form", { id: "compare-form" }, "A ", a, " B ", b, " ", el("button", { type: "submit" }, "Compare"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      location.hash = "#/compare/" + enc(a.value) + "/" + enc(b.value);
    });
    show(el("h1", {}, "Compare two branches"), el("p", {}, "Turn by turn: where the runs diverge, what each one said and did."), form);
  }

  function turnCell(turn) {
    if (!turn) return el("span", { class: "absent" }, "—");
    return el(
      "div",
      {},
      el("div", { class: "prompt" }, visible(turn.text, false)),
      turn.commit ? el("div", {}, commitLink(turn.commit)) : null,
      turn.tool_calls.length ? el("div", { class: "tools" }, "tools: " + turn.tool_calls.map((t) => visible(t.name ?? "?")).join(", ")) : null,
      fold("messages", () => el("div", { class: "chat" }, (turn.messages || []).map((m, i) => message(m, turn.start + i)))),
    );
  }

  async function compareView(a, b) {
    const data = await api("/api/compare", { a, b, offset: 0, limit: 50 });
    const rows = data.turns.map((t) =>
      el(
        "tr",
        { class: "turn turn-" + (["same", "diverged", "only_a", "only_b"].includes(t.status) ? t.status : "other") },
        el("td", {}, String(t.index)),
        el("td", {}, visible(t.status)),
        el("td", { class: "side side-a" }, turnCell(t.a)),
        el("td", { class: "side side-b" }, turnCell(t.b)),
      ),
    );
    show(
      el("h1", {}, "Compare ", visible(data.a.rev), " and ", visible(data.b.rev)),
      el(
        "p",
        { class: "summary", id: "compare-summary" },
        "A ", commitLink(data.a.id), " · B ", commitLink(data.b.id),
        " · merge base ", data.merge_base ? commitLink(data.merge_base) : "none",
        " · " + data.common_prefix + " messages in common · ",
        data.first_divergence === null ? "the runs are the same" : "first divergence at turn " + data.first_divergence,
        " · " + data.turn_count + " turns",
      ),
      el("table", { class: "diff", id: "compare-table" }, el("thead", {}, el("tr", {}, el("th", {}, "turn"), el("th", {}, "status"), el("th", {}, "A"), el("th", {}, "B"))), el("tbody", {}, rows)),
    );
  }

  // --- routing -----------------------------------------------------------------------------

  function parseHash() {
    const hash = location.hash.slice(1) || "/";
    const [path, query] = hash.split("?", 2);
    let parts;
    try {
      parts = path.split("/").slice(1).map(decodeURIComponent);
    } catch (_) {
      parts = ["?"];
    }
    return { parts, params: new URLSearchParams(query || "") };
  }

  async function render() {
    const generation = ++state.generation;
    const { parts, params } = parseHash();
    const [view, x, y] = parts;
    state.view = view || "graph";
    try {
      if (!view) await graphView();
      else if (view === "commit" && x) await commitView(x);
      else if (view === "diff" && x && y) await diffView(x, y);
      else if (view === "search") await searchView(params.get("q") || "");
      else if (view === "compare" && x && y) await compareView(x, y);
      else if (view === "compare") await compareForm();
      else throw new ApiError(404, "there is no page at this address");
    } catch (error) {
      if (generation === state.generation) show(errorBox(error));
    }
    document.title = "statevcs · " + state.view;
  }

  async function poll() {
    try {
      const refs = await api("/api/refs");
      if (state.version !== null && refs.version !== state.version) {
        live.textContent = "History changed at " + new Date().toLocaleTimeString();
        state.version = refs.version;
        if (state.view === "graph") await render();
      }
      state.version = refs.version;
    } catch (_) {
      live.textContent = "The server does not answer.";
    }
  }

  searchForm.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = "#/search?q=" + enc(searchInput.value);
  });
  window.addEventListener("hashchange", render);

  async function start() {
    // `statevcs serve --allow-write` prints an address whose fragment holds the token: keep it
    // for this tab and take it out of the address bar.
    const hash = location.hash;
    if (hash.startsWith("#token=")) {
      sessionStorage.setItem("statevcs-token", decodeURIComponent(hash.slice(7)));
      history.replaceState(null, "", location.pathname + "#/");
    }
    state.token = sessionStorage.getItem("statevcs-token");
    try {
      state.info = await api("/api/info");
      document.body.setAttribute("data-writable", state.info.writable ? "true" : "false");
    } catch (error) {
      show(errorBox(error));
      return;
    }
    await render();
    document.body.setAttribute("data-ready", "true");
    setInterval(poll, POLL_MS);
  }

  start();
})();
