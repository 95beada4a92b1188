// The console's page, built into the program: nothing is fetched from the network, and the page's
// Content-Security-Policy allows only these files (docs/console.md, "Security"). Everything from the server
// is put in the page with textContent and DOM calls, never as HTML, so keys and values stay text.

/// The page's HTML, script and style sheet.
package enum ConsoleAssets {
    /// The page.
    package static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>LiveDefaults console</title>
        <link rel="stylesheet" href="/console.css">
        </head>
        <body>
        <header>
          <h1>LiveDefaults</h1>
          <span id="status" class="status down">connecting…</span>
          <input id="search" type="search" placeholder="Search keys and values, nested ones too" aria-label="Search">
        </header>
        <div id="layout">
          <nav id="domains" aria-label="Domains"></nav>
          <main id="main"><p class="hint">Choose a domain.</p></main>
        </div>
        <script src="/console.js"></script>
        </body>
        </html>
        """#

    /// The style sheet.
    package static let style = #"""
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.4 system-ui, sans-serif; color: #1d2330; background: #f5f6f8; }
        header { display: flex; align-items: center; gap: 16px; padding: 8px 16px; background: #1d2330; color: #fff; }
        header h1 { font-size: 18px; margin: 0; font-weight: 600; }
        #search { margin-left: auto; width: 340px; padding: 5px 8px; border-radius: 4px; border: 1px solid #889; }
        .status { font-size: 12px; padding: 2px 8px; border-radius: 10px; }
        .status.live { background: #2e7d32; }
        .status.down { background: #b26a00; }
        #layout { display: flex; min-height: calc(100vh - 46px); }
        nav { width: 260px; flex: none; padding: 8px; border-right: 1px solid #d7dae0; background: #fff; overflow: auto; }
        nav h2 { font-size: 11px; text-transform: uppercase; color: #667; margin: 12px 6px 4px; }
        nav button { display: block; width: 100%; text-align: left; border: 0; background: none; padding: 5px 6px;
          border-radius: 4px; cursor: pointer; font: inherit; overflow-wrap: anywhere; }
        nav button:hover { background: #eef1f6; }
        nav button.current { background: #dce6f7; font-weight: 600; }
        main { flex: 1; padding: 12px 20px; min-width: 0; }
        main.stale .rows { opacity: 0.45; }
        .banner { background: #fff3d6; border: 1px solid #e0b44c; padding: 6px 10px; border-radius: 4px; }
        .badge { display: inline-block; font-size: 11px; padding: 0 6px; margin-left: 4px; border-radius: 8px;
          background: #e4e7ed; color: #334; vertical-align: middle; }
        .badge.forced { background: #c62828; color: #fff; }
        .badge.secret { background: #6a1b9a; color: #fff; }
        .badge.live { background: #2e7d32; color: #fff; }
        .badge.stale, .badge.offline, .badge.connecting { background: #b26a00; color: #fff; }
        .location { color: #556; font-size: 12px; overflow-wrap: anywhere; }
        table.rows { width: 100%; border-collapse: collapse; background: #fff; margin-top: 8px; }
        .rows th { text-align: left; font-size: 12px; color: #556; border-bottom: 1px solid #d7dae0; padding: 4px 8px; }
        .rows td { border-bottom: 1px solid #eceef2; padding: 4px 8px; vertical-align: top; }
        tr.row { cursor: pointer; }
        tr.row:hover { background: #f7f9fc; }
        td.key { font-family: ui-monospace, monospace; overflow-wrap: anywhere; width: 30%; }
        td.value { font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
        .matches { color: #556; font-size: 12px; }
        .details { background: #fafbfd; }
        .details section { margin: 6px 0 10px; }
        .details h3 { font-size: 12px; margin: 0 0 4px; color: #445; text-transform: uppercase; }
        .layers li.shadowed { color: #778; text-decoration: line-through; }
        .tree, .tree ul { list-style: none; margin: 0; padding-left: 16px; font-family: ui-monospace, monospace; }
        .tree .k { color: #7a3e9d; }
        .editor { display: flex; gap: 8px; align-items: flex-start; flex-wrap: wrap; }
        .editor textarea { width: 100%; min-height: 120px; font-family: ui-monospace, monospace; }
        .error { color: #b71c1c; white-space: pre-wrap; margin: 4px 0; }
        .saved { color: #2e7d32; }
        .readonly { color: #b71c1c; }
        .add { margin: 8px 0; display: flex; gap: 6px; flex-wrap: wrap; }
        .hint { color: #667; }
        .history li { margin: 2px 0; }
        .history .when, .history .origin, .history .who { color: #556; font-size: 12px; }
        .history .rollback { font-size: 12px; margin-left: 4px; }
        """#

    /// The script.
    package static let script = #"""
        "use strict";
        (() => {
          // A hook for the browser tests and the benchmark: when each change reached the page.
          const hook = { updates: [], lastRenderMilliseconds: null };
          window.__liveDefaults = hook;

          const state = {
            domains: [], current: null, domain: null, rows: new Map(), version: 0,
            live: false, snapshotPending: false, buffered: [], snapshotRequest: 0,
            expanded: new Set(), revealed: null, search: "", liveSince: null,
          };
          const rowElements = new Map();

          // Builds an element: attributes as properties, children as nodes or text (never HTML).
          function el(tag, properties, ...children) {
            const element = document.createElement(tag);
            for (const [name, value] of Object.entries(properties || {})) {
              if (name === "class") element.className = value;
              else if (name === "text") element.textContent = value;
              else if (name.startsWith("data-") || name.startsWith("aria-") || name === "role") element.setAttribute(name, value);
              else element[name] = value;
            }
            for (const child of children) {
              if (child === null || child === undefined) continue;
              element.append(typeof child === "string" ? document.createTextNode(child) : child);
            }
            return element;
          }

          // The token stays in the HttpOnly cookie, not in the address bar or the history.
          if (new URLSearchParams(location.search).has("token")) history.replaceState(null, "", "/" + location.hash);
          if (location.hash.length > 1) state.current = decodeURIComponent(location.hash.slice(1));

          // MARK: the stream

          let source = null;
          function connect() {
            source = new EventSource("/api/events");
            source.addEventListener("hello", () => takeSnapshot());
            for (const name of ["change", "domains"]) {
              source.addEventListener(name, (event) => receive(JSON.parse(event.data)));
            }
            source.onerror = () => {
              setLive(false);
              // A refused or dead server closes the stream for good: try again.
              if (source.readyState === EventSource.CLOSED) setTimeout(connect, 1000);
            };
          }

          function receive(event) {
            if (state.snapshotPending) { state.buffered.push(event); return; }
            if (event.version <= state.version) return;
            apply(event);
          }

          function apply(event) {
            state.version = event.version;
            if (event.event === "domains") {
              state.domains = event.domains;
              renderDomains();
              if (state.current && !state.domains.some((domain) => domain.id === state.current)) takeSnapshot();
              else if (state.domain) {
                const fresh = state.domains.find((domain) => domain.id === state.current);
                if (fresh) { state.domain.state = fresh.state; renderHeading(); }
              }
              return;
            }
            if (event.domain !== state.current) return;
            if (event.state && state.domain) { state.domain.state = event.state; renderHeading(); }
            if (event.row) state.rows.set(event.key, event.row); else state.rows.delete(event.key);
            if (state.revealed && state.revealed.key === event.key) state.revealed = null;
            renderRow(event.key);
            hook.updates.push({ key: event.key, at: Date.now(), text: event.row ? event.row.text : null });
          }

          // A snapshot with the version of the last event it holds; events that came meanwhile are applied after it.
          async function takeSnapshot() {
            const request = ++state.snapshotRequest;
            state.snapshotPending = true;
            state.buffered = [];
            const query = state.current ? "?domain=" + encodeURIComponent(state.current) : "";
            try {
              const response = await fetch("/api/snapshot" + query, { credentials: "same-origin", cache: "no-store" });
              if (!response.ok) throw new Error("HTTP " + response.status);
              const snapshot = await response.json();
              if (request !== state.snapshotRequest) return;
              state.version = snapshot.version;
              state.domains = snapshot.domains;
              state.domain = snapshot.domain || null;
              state.rows = new Map((state.domain ? state.domain.rows : []).map((row) => [row.key, row]));
              state.revealed = null;
              const buffered = state.buffered;
              state.buffered = [];
              state.snapshotPending = false;
              setLive(true, false);
              renderDomains();
              renderMain();
              for (const event of buffered) if (event.version > state.version) apply(event);
            } catch (error) {
              if (request !== state.snapshotRequest) return;
              state.snapshotPending = false;
              setLive(false);
              setTimeout(() => { if (source && source.readyState === EventSource.OPEN) takeSnapshot(); }, 1000);
            }
          }

          function setLive(live, render = true) {
            if (live && !state.live) state.liveSince = new Date();
            if (!live && state.live) state.liveSince = new Date();
            state.live = live;
            const status = document.getElementById("status");
            status.textContent = live ? "live" : "reconnecting…";
            status.className = "status " + (live ? "live" : "down");
            if (render) renderMain();
          }

          // MARK: domains

          function renderDomains() {
            const nav = document.getElementById("domains");
            nav.replaceChildren();
            const groups = [
              ["Suites", (domain) => !domain.kinds.includes("fleet")],
              ["Fleet (etcd)", (domain) => domain.kinds.includes("fleet")],
            ];
            for (const [title, belongs] of groups) {
              const members = state.domains.filter(belongs);
              if (members.length === 0) continue;
              nav.append(el("h2", { text: title }));
              for (const domain of members) {
                const button = el("button", { type: "button", "data-domain": domain.id, title: domain.location },
                  domain.id);
                for (const kind of domain.kinds) if (kind !== "user" && kind !== "fleet") button.append(el("span", { class: "badge", text: kind }));
                if (domain.state) button.append(el("span", { class: "badge " + domain.state.name, text: domain.state.name }));
                if (domain.id === state.current) button.classList.add("current");
                button.addEventListener("click", () => select(domain.id));
                nav.append(button);
              }
            }
          }

          function select(id) {
            state.current = id;
            state.expanded.clear();
            history.replaceState(null, "", "/#" + encodeURIComponent(id));
            takeSnapshot();
          }

          // MARK: the domain

          function renderMain() {
            const started = performance.now();
            const main = document.getElementById("main");
            main.classList.toggle("stale", !state.live);
            main.replaceChildren();
            rowElements.clear();
            if (!state.live) {
              main.append(el("p", { class: "banner", role: "status",
                text: "Not connected to the console: the values below were current at "
                  + (state.liveSince ? state.liveSince.toLocaleTimeString() : "the last connection")
                  + " and may have changed since. Reconnecting…" }));
            }
            if (!state.domain) {
              main.append(el("p", { class: "hint", text: state.current ? "There is no domain " + state.current + "." : "Choose a domain." }));
              hook.lastRenderMilliseconds = performance.now() - started;
              return;
            }
            main.append(el("div", { id: "heading" }));
            renderHeading();
            if (state.live) main.append(addForm());
            const table = el("table", { class: "rows" },
              el("thead", {}, el("tr", {}, el("th", { text: "Key" }), el("th", { text: "Value" }), el("th", { text: "From" }))));
            const body = el("tbody", { id: "rows" });
            const fragment = document.createDocumentFragment();
            for (const key of [...state.rows.keys()].sort()) fragment.append(...rowNodes(key));
            body.append(fragment);
            table.append(body);
            main.append(el("p", { id: "count", class: "hint" }), table);
            applySearch();
            hook.lastRenderMilliseconds = performance.now() - started;
          }

          function renderHeading() {
            const heading = document.getElementById("heading");
            if (!heading || !state.domain) return;
            const domain = state.domain;
            const title = el("h2", { text: domain.id });
            for (const kind of domain.kinds) title.append(el("span", { class: "badge", text: kind }));
            heading.replaceChildren(title, el("p", { class: "location", text: domain.location }));
            if (domain.state) {
              heading.append(el("p", { id: "fleet-state" }, "etcd: ",
                el("span", { class: "badge " + domain.state.name, text: domain.state.name }), " " + domain.state.text));
            }
            if (domain.schema) heading.append(el("p", { class: "location", text: "Schema: " + domain.schema }));
            if (domain.schemaProblem) heading.append(el("p", { class: "error", text: domain.schemaProblem }));
            if (domain.problem) heading.append(el("p", { class: "error", text: domain.problem }));
          }

          function addForm() {
            const key = el("input", { type: "text", placeholder: "new key", "aria-label": "New key", id: "add-key" });
            const kind = el("select", { "aria-label": "Type", id: "add-kind" });
            for (const [value, label] of [["string", "string"], ["integer", "integer"], ["real", "real"], ["bool", "boolean"], ["text", "property list"]]) {
              kind.append(el("option", { value, text: label }));
            }
            const value = el("input", { type: "text", placeholder: "value", "aria-label": "New value", id: "add-value" });
            const error = el("p", { class: "error", role: "alert", id: "add-error" });
            const button = el("button", { type: "button", text: "Add" });
            button.addEventListener("click", async () => {
              error.textContent = "";
              try {
                await post("/api/write", { domain: state.current, key: key.value, kind: kind.value, text: value.value });
                key.value = ""; value.value = "";
              } catch (problem) { error.textContent = problem.message; }
            });
            return el("div", {}, el("div", { class: "add" }, key, kind, value, button), error);
          }

          // The row of `key` and, when open, its details.
          function rowNodes(key) {
            const row = shownRow(key);
            const line = el("tr", { class: "row", "data-key": key });
            const keyCell = el("td", { class: "key", text: key });
            if (row.forcedBy) keyCell.append(el("span", { class: "badge forced", text: "forced" }));
            if (row.secret) keyCell.append(el("span", { class: "badge secret", text: "secret" }));
            const valueCell = el("td", { class: "value" });
            valueCell.append(row.text !== undefined ? row.text : el("span", { class: "hint", text: "not set"
              + (row.schema && row.schema.default !== undefined ? " (default " + row.schema.default + ")" : "") }));
            valueCell.append(el("div", { class: "matches" }));
            line.append(keyCell, valueCell, el("td", { text: row.layer || "" }));
            line.addEventListener("click", () => {
              if (state.expanded.has(key)) state.expanded.delete(key); else state.expanded.add(key);
              renderRow(key);
            });
            const nodes = [line];
            if (state.expanded.has(key)) nodes.push(el("tr", { class: "details", "data-details": key }, el("td", { colSpan: 3 }, details(key, row))));
            rowElements.set(key, nodes);
            return nodes;
          }

          function shownRow(key) {
            return state.revealed && state.revealed.key === key ? state.revealed.row : state.rows.get(key);
          }

          function renderRow(key) {
            const body = document.getElementById("rows");
            if (!body) return;
            const old = rowElements.get(key);
            if (!state.rows.has(key)) {
              if (old) old.forEach((node) => node.remove());
              rowElements.delete(key);
              applySearch();
              return;
            }
            const nodes = rowNodes(key);
            if (old) {
              old[0].before(...nodes);
              old.forEach((node) => node.remove());
            } else {
              const following = [...state.rows.keys()].sort().find((other) => other > key && rowElements.has(other) && other !== key);
              if (following) rowElements.get(following)[0].before(...nodes); else body.append(...nodes);
            }
            applySearch();
          }

          // The details of a row: one section per builder.
          const sectionBuilders = [schemaSection, forcedSection, layersSection, valueSection, editorSection, historySection];

          function details(key, row) {
            const panel = el("div", {});
            for (const build of sectionBuilders) {
              const section = build(key, row);
              if (section) panel.append(section);
            }
            return panel;
          }

          function schemaSection(key, row) {
            const schema = row.schema;
            if (!schema) return null;
            const section = el("section", { class: "schema" }, el("h3", { text: "Schema" }));
            if (schema.summary) section.append(el("p", { class: "summary", text: schema.summary }));
            const facts = ["type " + schema.type];
            if (schema.minimum !== undefined) facts.push("range " + schema.minimum + " … " + schema.maximum);
            if (schema.choices) facts.push("one of " + schema.choices.join(", "));
            if (schema.default !== undefined) facts.push("default " + schema.default);
            section.append(el("p", { text: facts.join(" · ") }), el("p", { class: "location", text: schema.source }));
            return section;
          }

          function forcedSection(key, row) {
            if (!row.forcedBy) return null;
            return el("section", { class: "forced" }, el("p", { class: "readonly",
              text: "Forced by the administrator in " + row.forcedBy + ": read-only here." }));
          }

          function layersSection(key, row) {
            const list = el("ol", { class: "layers" });
            for (const layer of row.layers) {
              const where = layer.location ? layer.location + (layer.revision !== undefined ? " (revision " + layer.revision + ")" : "") : layer.domain;
              list.append(el("li", { class: layer.wins ? "wins" : "shadowed" },
                el("strong", { text: layer.layer }), " " + where + "  ", el("code", { text: layer.text })));
            }
            if (row.layers.length === 0) list.append(el("li", { class: "hint", text: "No layer holds this key." }));
            return el("section", {}, el("h3", { text: "Layers (the first wins)" }), list);
          }

          function valueSection(key, row) {
            if (!row.value || (row.value.t !== "dict" && row.value.t !== "array")) return null;
            return el("section", {}, el("h3", { text: "Value" }), el("ul", { class: "tree" }, tree(row.value, null)));
          }

          // A nested value, recursively: dictionaries and arrays fold.
          function tree(node, label) {
            const item = el("li", {});
            const name = label === null ? null : el("span", { class: "k", text: label + ": " });
            if (node.t === "dict" || node.t === "array") {
              const entries = node.t === "dict" ? node.v : node.v.map((child, index) => [String(index), child]);
              const list = el("ul", {});
              for (const [childLabel, child] of entries) list.append(tree(child, childLabel));
              const fold = el("details", { open: true }, el("summary", {}, name, node.t + " (" + entries.length + ")"), list);
              item.append(fold);
            } else {
              item.append(name || "", el("span", { class: "scalar " + node.t, text: String(node.v) }));
            }
            return item;
          }

          // The control the schema (or the value's type) calls for. An edit goes through `defaults write`.
          function editorSection(key, row) {
            const section = el("section", { class: "edit" }, el("h3", { text: "Edit" }));
            const error = el("p", { class: "error", role: "alert" });
            const note = el("span", { class: "saved" });
            const disabled = !!row.forcedBy || !state.live;
            const schema = row.schema;
            const type = schema ? schema.type : row.type;
            const hidden = row.value && row.value.t === "secret";
            const editor = el("div", { class: "editor" });
            let control;
            let read;
            async function save(kind, text) {
              error.textContent = ""; note.textContent = "";
              try {
                await post("/api/write", { domain: state.current, key, kind, text });
                note.textContent = "saved";
              } catch (problem) { error.textContent = problem.message; }
            }
            if (type === "boolean") {
              control = el("input", { type: "checkbox", role: "switch", checked: row.value ? row.value.v === true : schema && schema.default === "1", disabled, "aria-label": key });
              control.addEventListener("change", () => save("bool", control.checked ? "true" : "false"));
              editor.append(el("label", {}, control, " on"));
            } else {
              let kind;
              if (schema && schema.choices) {
                control = el("select", { disabled, "aria-label": key });
                for (const choice of schema.choices) control.append(el("option", { value: choice, text: choice }));
                if (row.text !== undefined) control.value = row.text;
                kind = "text";
              } else if (type === "integer" || type === "real") {
                control = el("input", { type: "number", disabled, "aria-label": key, step: type === "integer" ? "1" : "any" });
                if (schema && schema.minimum !== undefined) { control.min = schema.minimum; control.max = schema.maximum; }
                if (row.value && !hidden) control.value = row.value.v;
                kind = schema ? "text" : type;
              } else if (type === "array" || type === "dictionary" || type === "any") {
                control = el("textarea", { disabled, "aria-label": key, spellcheck: false });
                control.value = row.editText || "";
                kind = "text";
              } else {
                control = el("input", { type: hidden ? "password" : "text", disabled, "aria-label": key });
                if (row.value && !hidden) control.value = row.value.t === "string" ? row.value.v : row.text;
                kind = schema ? (type === "string" ? "string" : "text") : (["date", "data"].includes(type) ? type : "string");
              }
              read = () => control.value;
              const button = el("button", { type: "button", text: "Save", disabled, class: "save" });
              button.addEventListener("click", () => save(kind, read()));
              editor.append(control, button);
            }
            if (row.secret) {
              const reveal = el("button", { type: "button", class: "reveal", text: hidden ? "Reveal" : "Hide" });
              reveal.addEventListener("click", async () => {
                if (!hidden) { state.revealed = null; renderRow(key); return; }
                try {
                  const answer = await post("/api/reveal", { domain: state.current, key });
                  const previous = state.revealed;
                  state.revealed = { key, row: answer.row, history: answer.history };
                  if (previous && previous.key !== key) renderRow(previous.key);
                  renderRow(key);
                } catch (problem) { error.textContent = problem.message; }
              });
              editor.append(reveal);
            }
            if (row.text !== undefined && !row.forcedBy) {
              const remove = el("button", { type: "button", class: "remove", text: "Remove", disabled });
              remove.addEventListener("click", async () => {
                error.textContent = "";
                try { await post("/api/delete", { domain: state.current, key }); } catch (problem) { error.textContent = problem.message; }
              });
              editor.append(remove);
            }
            editor.append(note);
            section.append(editor, error);
            return section;
          }

          // The key's newest changes from `defaults history`, each with a button that rolls the key back to it
          // (`defaults rollback <domain> <key> --to <entry>`). Drawn again with the row, so each change refreshes it.
          function historySection(key, row, report) {
            const note = el("p", { class: "hint", text: "loading…" });
            const list = el("ol", { class: "history" });
            const error = el("p", { class: "error", role: "alert" });
            const section = el("section", { class: "history", "data-history": key },
              el("h3", { text: "History (newest first)" }), note, list, error);
            function fill(history) {
              if (history.unavailable) { note.textContent = history.unavailable; return; }
              note.textContent = history.entries.length === 0 ? "No change of this key is in the history." : report || "";
              for (const entry of history.entries) {
                const item = el("li", { "data-entry": String(entry.id) },
                  el("span", { class: "when", text: "#" + entry.id + " " + entry.date }), " ",
                  el("code", { class: "old", text: entry.old }), " → ", el("code", { class: "new", text: entry.new }), " ",
                  el("span", { class: "origin", text: entry.origin }), " ", el("span", { class: "who", text: entry.who }));
                if (!row.forcedBy) {
                  const button = el("button", { type: "button", class: "rollback", text: "Roll back to this",
                    title: "Restore the value this change set: undo the later changes of " + key, disabled: !state.live });
                  button.addEventListener("click", async () => {
                    error.textContent = "";
                    try {
                      const answer = await post("/api/rollback", { domain: state.current, key, entry: entry.id });
                      // Read again now that the rollback's record is in the log: the redraw its change event
                      // made (which replaced this section) may have read the log between the file's rename and
                      // the record's append.
                      const shown = [...document.querySelectorAll("section.history")]
                        .find((node) => node.dataset.history === key);
                      if (shown) shown.replaceWith(historySection(key, row, answer.report));
                    } catch (problem) { error.textContent = problem.message; }
                  });
                  item.append(" ", button);
                }
                list.append(item);
              }
            }
            const revealed = state.revealed && state.revealed.key === key ? state.revealed.history : null;
            if (revealed) fill(revealed);
            else {
              const query = "?domain=" + encodeURIComponent(state.current) + "&key=" + encodeURIComponent(key);
              fetch("/api/history" + query, { credentials: "same-origin", cache: "no-store" })
                .then(async (response) => {
                  const answer = await response.json().catch(() => ({}));
                  if (!response.ok) throw new Error(answer.error || "The console answered " + response.status + ".");
                  fill(answer);
                })
                .catch((problem) => { note.textContent = ""; error.textContent = problem.message; });
            }
            return section;
          }

          // MARK: search

          // Where `needle` is in a value, as paths ("rateLimit.burst"); nested keys and strings count.
          function matches(node, needle, path, found) {
            if (node.t === "dict") {
              for (const [key, child] of node.v) {
                const childPath = path ? path + "." + key : key;
                if (key.toLowerCase().includes(needle)) found.push(childPath);
                matches(child, needle, childPath, found);
              }
            } else if (node.t === "array") {
              node.v.forEach((child, index) => matches(child, needle, (path || "") + "[" + index + "]", found));
            } else if (node.t !== "secret" && String(node.v).toLowerCase().includes(needle)) {
              if (path) found.push(path);
              else found.push("");
            }
            return found;
          }

          function applySearch() {
            const needle = state.search;
            let shown = 0;
            for (const [key, nodes] of rowElements) {
              const row = shownRow(key);
              let visible = true;
              const where = nodes[0].querySelector(".matches");
              where.textContent = "";
              if (needle) {
                const found = row && row.value ? matches(row.value, needle, "", []) : [];
                visible = key.toLowerCase().includes(needle) || found.length > 0;
                const nested = found.filter((path) => path !== "");
                if (nested.length > 0) where.textContent = "matches at " + nested.slice(0, 5).join(", ");
              }
              for (const node of nodes) node.hidden = !visible;
              if (visible) shown += 1;
            }
            const count = document.getElementById("count");
            if (count) count.textContent = shown + (needle ? " of " + state.rows.size : "") + " keys";
          }

          document.getElementById("search").addEventListener("input", (event) => {
            state.search = event.target.value.toLowerCase();
            applySearch();
          });

          async function post(path, body) {
            const response = await fetch(path, {
              method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
              body: JSON.stringify(body),
            });
            let answer = {};
            try { answer = await response.json(); } catch (ignored) { answer = {}; }
            if (!response.ok) throw new Error(answer.error || "The console answered " + response.status + ".");
            return answer;
          }

          connect();
        })();
        """#
}
