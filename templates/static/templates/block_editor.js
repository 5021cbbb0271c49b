/* The template block editor (templates/admin_editor.py). Blocks are data: the editor edits the document held in
   the form's hidden `content` field (schema: templates/blocks.py) and each language's texts in `translations`;
   the server validates and renders them. Rich text: Trix; drag and drop: SortableJS (both from npm, served from
   static/editor/). No inline script, no eval: the configuration is a JSON data block. */
"use strict";
(function () {
  const TYPES = {
    heading: "Heading", text: "Text", image: "Image", button: "Button", divider: "Divider",
    spacer: "Spacer", columns: "Columns", social: "Social links", footer: "Footer", raw: "Raw HTML",
  };
  const NETWORKS = ["facebook", "instagram", "linkedin", "x", "youtube", "github", "pinterest", "web"];
  const ALIGN = [["left", "Left"], ["center", "Centre"], ["right", "Right"]];
  // [key, label, kind, options]
  const FIELDS = {
    heading: [["text", "Text", "text", { variables: true }], ["level", "Size", "select", { choices: [[1, "Large"], [2, "Medium"], [3, "Small"]] }], ["align", "Alignment", "align"], ["color", "Colour", "color", { optional: true }]],
    text: [["html", "Text", "richtext"], ["align", "Alignment", "align"], ["fontSize", "Font size (px)", "number", { min: 10, max: 32 }], ["color", "Colour", "color", { optional: true }]],
    image: [["src", "Image", "image"], ["alt", "Alt text", "text", { help: "What the image shows, for screen readers and blocked images." }], ["href", "Link (optional)", "link"], ["width", "Width (px, empty: full width)", "number", { min: 16, max: 600, optional: true }], ["align", "Alignment", "align"]],
    button: [["label", "Label", "text", { variables: true }], ["href", "Link", "link"], ["align", "Alignment", "align"], ["buttonColor", "Button colour", "color"], ["textColor", "Text colour", "color"], ["borderRadius", "Corner radius (px)", "number", { min: 0, max: 40 }]],
    divider: [["color", "Colour", "color"], ["thickness", "Thickness (px)", "number", { min: 1, max: 10 }]],
    spacer: [["height", "Height (px)", "number", { min: 4, max: 200 }]],
    social: [["links", "Links", "social"], ["align", "Alignment", "align"]],
    footer: [["text", "Note above the links", "textarea"], ["showUnsubscribe", "Unsubscribe link", "checkbox"], ["unsubscribeText", "Unsubscribe link text", "text"], ["showPreferences", "Preference centre link", "checkbox"], ["preferencesText", "Preference link text", "text"], ["showAddress", "The organization's postal address", "checkbox"], ["align", "Alignment", "align"], ["color", "Colour", "color"]],
    raw: [["html", "HTML (sent as written)", "code"]],
    columns: [],
  };
  const DEFAULTS = {
    heading: { text: "Your heading", level: 1, align: "left", color: null },
    text: { html: "<div>Write something…</div>", align: "left", fontSize: 16, color: null },
    image: { imageId: null, src: "", alt: "", href: null, width: null, height: null, align: "center" },
    button: { label: "Read more", href: "https://", align: "center", buttonColor: "#2563eb", textColor: "#ffffff", borderRadius: 6 },
    divider: { color: "#e5e7eb", thickness: 1 },
    spacer: { height: 24 },
    social: { links: [{ network: "facebook", url: "https://" }], align: "center" },
    footer: { text: "", showUnsubscribe: true, showPreferences: true, showAddress: true, unsubscribeText: "Unsubscribe", preferencesText: "Manage preferences", align: "center", color: "#6b7280" },
    raw: { html: "<p>HTML</p>" },
    columns: { columns: [{ blocks: [] }, { blocks: [] }] },
  };
  const PADDING = { top: 10, right: 25, bottom: 10, left: 25 };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const child of children.flat()) if (child) node.append(child);
    return node;
  }
  function uid(type) { return type.slice(0, 3) + "-" + Math.random().toString(36).slice(2, 8); }
  function clone(value) { return JSON.parse(JSON.stringify(value)); }
  function newBlock(type) {
    const block = Object.assign({ id: uid(type), type: type, padding: Object.assign({}, PADDING), backgroundColor: null }, clone(DEFAULTS[type]));
    if (type === "columns") block.padding = { top: 10, right: 25, bottom: 10, left: 25 };
    return block;
  }
  function renew(block) { // a duplicate gets new ids, its columns' blocks too
    block.id = uid(block.type);
    (block.columns || []).forEach((c) => c.blocks.forEach(renew));
    return block;
  }

  class Editor {
    constructor(root) {
      this.root = root;
      this.config = JSON.parse(document.getElementById(root.dataset.config).textContent);
      this.content = document.querySelector(root.dataset.contentInput);
      this.translationsInput = document.querySelector(root.dataset.translationsInput);
      this.doc = this.config.content || null;
      this.texts = this.config.translations || {};
      this.language = this.config.defaultLanguage;
      this.open = new Set();
      this.frameWidth = 600;
      this.build();
    }

    // --- document state ---------------------------------------------------------------------------
    changed() {
      this.content.value = this.doc ? JSON.stringify(this.doc) : "";
      if (this.translationsInput) this.translationsInput.value = JSON.stringify(this.texts);
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.preview(), 400);
    }
    list(path) { return path === null ? this.doc.blocks : path.block.columns[path.column].blocks; }

    build() {
      this.root.replaceChildren();
      const bar = el("div", { class: "obe-bar" });
      if (!this.doc) {
        this.root.append(this.starter());
        return;
      }
      const languages = this.config.languages;
      if (languages.length > 1) {
        const select = el("select", { class: "obe-language", "aria-label": "Language being edited", onchange: (e) => { this.language = e.target.value; this.build(); } },
          languages.map(([code, name]) => el("option", { value: code, selected: code === this.language, text: code === this.config.defaultLanguage ? name + " (default: blocks and texts)" : name + " (texts only)" })));
        bar.append(el("label", { class: "obe-label" }, "Editing ", select));
      }
      bar.append(el("button", { type: "button", class: "obe-btn", onclick: () => { this.open = new Set(this.allIds()); this.build(); } , text: "Expand all" }),
        el("button", { type: "button", class: "obe-btn", onclick: () => { this.open.clear(); this.build(); }, text: "Collapse all" }));
      const layout = el("div", { class: "obe-layout" });
      const left = el("div", { class: "obe-blocks" });
      const settings = this.settingsPanel();
      if (this.isDefault()) left.append(settings);
      left.append(this.blockList(null));
      if (this.isDefault()) left.append(this.addMenu(null));
      layout.append(left, this.previewPanel());
      this.root.append(bar, layout);
      this.changed();
    }
    previewPanel() {
      const note = el("span", { class: "obe-muted obe-scale-note" });
      const widths = el("span", { class: "obe-segmented", role: "group", "aria-label": "Preview width" },
        [[600, "Desktop"], [375, "Mobile"]].map(([w, label]) => el("button", { type: "button", class: "obe-seg" + (w === this.frameWidth ? " obe-on" : ""), "aria-pressed": w === this.frameWidth ? "true" : "false", "data-width": w, onclick: () => { this.frameWidth = w; this.build(); }, text: label + " " + w + " px" })));
      const frame = el("iframe", { name: this.root.id + "-frame", class: "obe-frame", sandbox: this.config.sandboxFlags, referrerpolicy: "no-referrer", title: "Live preview of the email" });
      const stage = el("div", { class: "obe-stage" }, frame);
      const panel = el("div", { class: "obe-preview" },
        el("div", { class: "obe-preview-head" }, el("strong", { text: "Live preview" }), el("span", { class: "obe-muted", text: "sample data" }), note, widths),
        stage);
      // the email is drawn at its real width and scaled down to the column when the column is narrower
      const fit = () => {
        const width = this.frameWidth, room = stage.clientWidth;
        if (!room) return;
        const scale = Math.min(1, room / width);
        frame.style.width = width + "px";
        frame.style.height = Math.round(stage.clientHeight / scale) + "px";
        frame.style.transform = scale < 1 ? "scale(" + scale.toFixed(4) + ")" : "";
        note.textContent = scale < 1 ? "shown at " + Math.round(scale * 100) + " %" : "";
      };
      if (this.resizer) this.resizer.disconnect();
      this.resizer = new ResizeObserver(fit);
      this.resizer.observe(stage);
      return panel;
    }
    isDefault() { return this.language === this.config.defaultLanguage; }
    allIds() { const ids = []; const walk = (bs) => bs.forEach((b) => { ids.push(b.id); (b.columns || []).forEach((c) => walk(c.blocks)); }); walk(this.doc.blocks); return ids; }

    starter() {
      const box = el("div", { class: "obe-starter" }, el("h3", { text: "Start from a layout" }),
        el("p", { class: "obe-muted", text: "Pick a starter layout; every block can be changed, moved or removed afterwards." }));
      const grid = el("div", { class: "obe-starter-grid" });
      for (const [key, layout] of Object.entries(this.config.layouts)) {
        grid.append(el("button", { type: "button", class: "obe-card", "data-layout": key, onclick: () => { this.doc = clone(layout.content); this.build(); } },
          el("strong", { text: layout.name }), el("span", { class: "obe-muted", text: layout.description })));
      }
      grid.append(el("button", { type: "button", class: "obe-card", "data-layout": "blank", onclick: () => { this.doc = { version: 1, settings: {}, blocks: [] }; this.build(); } },
        el("strong", { text: "Blank" }), el("span", { class: "obe-muted", text: "No blocks yet" })));
      box.append(grid);
      return box;
    }

    settingsPanel() {
      const s = this.doc.settings = Object.assign({ backgroundColor: "#f4f4f5", contentBackgroundColor: "#ffffff", textColor: "#1f2937", linkColor: "#2563eb", fontFamily: "Arial" }, this.doc.settings || {});
      const body = el("div", { class: "obe-fields" },
        this.colorField("Page background", s.backgroundColor, (v) => { s.backgroundColor = v; }),
        this.colorField("Content background", s.contentBackgroundColor, (v) => { s.contentBackgroundColor = v; }),
        this.colorField("Text colour", s.textColor, (v) => { s.textColor = v; }),
        this.colorField("Link colour", s.linkColor, (v) => { s.linkColor = v; }),
        this.selectField("Font", s.fontFamily, this.config.fonts.map((f) => [f, f]), (v) => { s.fontFamily = v; }));
      return el("details", { class: "obe-settings" }, el("summary", { text: "Email style (colours, font)" }), body);
    }

    // --- block list and cards -------------------------------------------------------------------
    blockList(path) {
      const list = el("div", { class: path ? "obe-list obe-inner" : "obe-list", "data-empty": path ? "Drop or add blocks here" : "Add a block below" });
      this.list(path).forEach((block, index) => list.append(this.card(block, path, index)));
      if (this.isDefault() && window.Sortable) {
        window.Sortable.create(list, {
          handle: ".obe-handle", animation: 120, forceFallback: true, fallbackOnBody: true,
          group: path ? "inner" : "top",
          onEnd: (event) => this.moved(event),
        });
      }
      list._path = path;
      return list;
    }
    moved(event) {
      const from = event.from._path, to = event.to._path;
      const [block] = this.list(from).splice(event.oldIndex, 1);
      this.list(to).splice(event.newIndex, 0, block);
      this.build();
    }
    card(block, path, index) {
      const open = this.open.has(block.id);
      const isDefault = this.isDefault();
      const head = el("div", { class: "obe-card-head" },
        isDefault ? el("span", { class: "obe-handle material-symbols-outlined", title: "Drag to reorder", "aria-hidden": "true", text: "drag_indicator" }) : null,
        el("button", { type: "button", class: "obe-toggle", "aria-expanded": open ? "true" : "false", onclick: () => { open ? this.open.delete(block.id) : this.open.add(block.id); this.build(); } },
          el("strong", { text: TYPES[block.type] }), el("span", { class: "obe-summary", text: this.summary(block) })));
      if (isDefault) {
        const list = this.list(path);
        head.append(el("span", { class: "obe-actions" },
          icon("Move up", "arrow_upward", index === 0, () => { list.splice(index - 1, 0, list.splice(index, 1)[0]); this.build(); }, "obe-move"),
          icon("Move down", "arrow_downward", index === list.length - 1, () => { list.splice(index + 1, 0, list.splice(index, 1)[0]); this.build(); }, "obe-move"),
          icon("Duplicate", "content_copy", false, () => { const copy = renew(clone(block)); list.splice(index + 1, 0, copy); this.open.add(copy.id); this.build(); }),
          icon("Delete", "delete", false, () => { if (window.confirm("Delete this " + TYPES[block.type].toLowerCase() + " block? Its texts in other languages go with it.")) { list.splice(index, 1); this.build(); } }, "obe-danger")));
      }
      const card = el("div", { class: "obe-block", "data-type": block.type, "data-id": block.id }, head);
      if (open) card.append(isDefault ? this.blockFields(block) : this.textFields(block));
      if (block.type === "columns") {
        const cols = el("div", { class: "obe-columns obe-cols-" + block.columns.length });
        block.columns.forEach((column, i) => {
          const p = { block: block, column: i };
          cols.append(el("div", { class: "obe-column" }, el("div", { class: "obe-muted", text: "Column " + (i + 1) }), this.blockList(p), isDefault ? this.addMenu(p) : null));
        });
        card.append(cols);
      }
      return card;
    }
    summary(block) {
      const strip = (h) => { const d = document.createElement("div"); d.innerHTML = h; return d.textContent; };
      switch (block.type) {
        case "heading": return block.text;
        case "text": return strip(block.html).slice(0, 80);
        case "image": return block.src ? (block.alt || "no alt text") : "no image chosen";
        case "button": return block.label + " → " + block.href;
        case "spacer": return block.height + " px";
        case "columns": return block.columns.length + " columns";
        case "social": return block.links.map((l) => l.network).join(", ");
        case "footer": return [block.showUnsubscribe && "unsubscribe", block.showPreferences && "preferences", block.showAddress && "address"].filter(Boolean).join(", ");
        default: return "";
      }
    }
    addMenu(path) {
      const types = Object.keys(TYPES).filter((t) => !(path && t === "columns"));
      const select = el("select", { class: "obe-add", "aria-label": "Add a block", onchange: (e) => {
        if (!e.target.value) return;
        const type = e.target.value;
        if (type.startsWith("columns")) { const b = newBlock("columns"); if (type === "columns3") b.columns.push({ blocks: [] }); this.list(path).push(b); }
        else { const b = newBlock(type); this.list(path).push(b); this.open.add(b.id); }
        this.build();
      } }, el("option", { value: "", text: path ? "+ Add to this column…" : "+ Add a block…" }),
      types.flatMap((t) => t === "columns" ? [el("option", { value: "columns", text: "Two columns" }), el("option", { value: "columns3", text: "Three columns" })] : [el("option", { value: t, text: TYPES[t] })]));
      return select;
    }

    // --- fields ---------------------------------------------------------------------------------
    blockFields(block) {
      const box = el("div", { class: "obe-fields" });
      for (const [key, label, kind, opts] of FIELDS[block.type]) box.append(this.field(block, key, label, kind, opts || {}));
      if (block.type !== "spacer") {
        box.append(this.colorField("Background", block.backgroundColor, (v) => { block.backgroundColor = v; }, true));
        box.append(this.paddingField(block));
      }
      return box;
    }
    textFields(block) {
      const keys = this.config.translatable[block.type] || [];
      const box = el("div", { class: "obe-fields" });
      if (!keys.length) { box.append(el("p", { class: "obe-muted", text: "Nothing to translate in this block: it is shared by every language." })); return box; }
      const lang = this.language;
      const texts = ((this.texts[lang] = this.texts[lang] || {})[block.id] = (this.texts[lang] || {})[block.id] || {});
      for (const [key, label, kind, opts] of FIELDS[block.type]) {
        if (!keys.includes(key)) continue;
        const proxy = { [key]: texts[key] || "" };
        const set = () => { if (proxy[key]) texts[key] = proxy[key]; else delete texts[key]; this.changed(); };
        box.append(this.field(proxy, key, label + " (" + lang + ")", kind === "link" ? "link" : kind, Object.assign({}, opts, { placeholder: kind === "richtext" ? null : block[key], onset: set, defaultHtml: block[key] })));
      }
      return box;
    }
    wrap(label, input, help, extra) {
      return el("label", { class: "obe-field" + (extra ? " " + extra : "") }, el("span", { class: "obe-label", text: label }), input, help ? el("span", { class: "obe-help", text: help }) : null);
    }
    field(block, key, label, kind, opts) {
      const set = (value) => { block[key] = value; (opts.onset || (() => this.changed()))(); };
      if (kind === "text" || kind === "link") {
        const input = el("input", { type: kind === "link" ? "url" : "text", class: "obe-input", value: block[key] || "", placeholder: opts.placeholder || (kind === "link" ? "https://" : ""), "data-key": key, oninput: (e) => set(e.target.value || (kind === "link" ? null : "")) });
        const picker = opts.variables || kind === "link";
        const row = el("span", { class: "obe-row obe-nowrap" }, input, picker ? this.variablePicker((text) => { insertAt(input, text); set(input.value); }) : null);
        return this.wrap(label, row, opts.help, picker ? "obe-wide" : null); // a field with its picker: a whole row
      }
      if (kind === "textarea" || kind === "code") {
        const input = el("textarea", { class: "obe-input" + (kind === "code" ? " obe-code" : ""), rows: kind === "code" ? 8 : 2, "data-key": key, oninput: (e) => set(e.target.value), placeholder: opts.placeholder || "" });
        input.value = block[key] || "";
        return this.wrap(label, input, opts.help);
      }
      if (kind === "number") {
        const input = el("input", { type: "number", class: "obe-input obe-number", min: opts.min, max: opts.max, value: block[key] === null || block[key] === undefined ? "" : block[key], "data-key": key, oninput: (e) => set(e.target.value === "" ? (opts.optional ? null : opts.min) : Number(e.target.value)) });
        return this.wrap(label, input, opts.help);
      }
      if (kind === "select") return this.selectField(label, block[key], opts.choices, (v) => set(isNaN(Number(v)) ? v : Number(v)));
      if (kind === "align") return this.alignField(label, block[key], set);
      if (kind === "color") return this.colorField(label, block[key], set, opts.optional);
      if (kind === "checkbox") {
        const input = el("input", { type: "checkbox", checked: !!block[key], "data-key": key, onchange: (e) => set(e.target.checked) });
        return el("label", { class: "obe-field obe-check" }, input, el("span", { text: label }));
      }
      if (kind === "richtext") return this.richText(block, key, label, set, opts);
      if (kind === "image") return this.imageField(block, set);
      if (kind === "social") return this.socialField(block, set);
      return el("span");
    }
    selectField(label, value, choices, set) {
      const select = el("select", { class: "obe-input", onchange: (e) => { set(e.target.value); this.changed(); } },
        choices.map(([v, l]) => el("option", { value: v, selected: String(v) === String(value), text: l })));
      return this.wrap(label, select);
    }
    alignField(label, value, set) {
      const group = el("span", { class: "obe-segmented", role: "radiogroup" });
      ALIGN.forEach(([v, l]) => group.append(el("button", { type: "button", class: "obe-seg" + (v === value ? " obe-on" : ""), "aria-pressed": v === value ? "true" : "false", onclick: (e) => { set(v); group.querySelectorAll("button").forEach((b) => b.classList.remove("obe-on")); e.target.classList.add("obe-on"); }, text: l })));
      return el("div", { class: "obe-field" }, el("span", { class: "obe-label", text: label }), group);
    }
    colorField(label, value, set, optional) {
      const text = el("input", { type: "text", class: "obe-input obe-hex", value: value || "", placeholder: optional ? "default" : "#000000", pattern: "#[0-9a-fA-F]{6}", size: 8 });
      const picker = el("input", { type: "color", class: "obe-color", value: value || "#ffffff", "aria-label": label });
      picker.addEventListener("input", () => { text.value = picker.value; set(picker.value); this.changed(); });
      text.addEventListener("input", () => { const v = text.value.trim(); if (/^#[0-9a-fA-F]{6}$/.test(v)) { picker.value = v; set(v); this.changed(); } else if (!v && optional) { set(null); this.changed(); } });
      return this.wrap(label, el("span", { class: "obe-row" }, picker, text));
    }
    paddingField(block) {
      const p = block.padding = Object.assign({}, PADDING, block.padding || {});
      const row = el("span", { class: "obe-padding" });
      [["top", "Top"], ["right", "Right"], ["bottom", "Bottom"], ["left", "Left"]].forEach(([side, name]) => row.append(el("label", { class: "obe-pad", title: name + " padding (px)" }, el("span", { class: "obe-muted", text: name }),
        el("input", { type: "number", class: "obe-input obe-pad-input", min: 0, max: 120, value: p[side], "data-key": "padding-" + side, "aria-label": name + " padding (px)", oninput: (e) => { p[side] = Math.max(0, Math.min(120, Number(e.target.value) || 0)); this.changed(); } }))));
      return el("div", { class: "obe-field obe-wide" }, el("span", { class: "obe-label", text: "Padding (px)" }), row);
    }
    variablePicker(insert) {
      const select = el("select", { class: "obe-vars", title: "Insert a variable", "aria-label": "Insert a variable", onchange: (e) => {
        const name = e.target.value; e.target.value = "";
        if (!name) return;
        const variable = this.config.variables.find((v) => v.name === name);
        let text = "{{" + name + "}}";
        if (variable && variable.fallback) {
          const fallback = window.prompt("Text to use when a contact has no " + variable.label.toLowerCase() + " (empty: none)", variable.fallback);
          if (fallback === null) return;
          if (fallback) text = "{{" + name + "|'" + fallback.replace(/'/g, "’") + "'}}";
        }
        insert(text);
      } }, el("option", { value: "", text: "{{ }} Variable" }), this.config.variables.map((v) => el("option", { value: v.name, text: v.label })));
      return select;
    }
    richText(block, key, label, set, opts) {
      const inputId = this.root.id + "-rt-" + Math.random().toString(36).slice(2, 8);
      const hidden = el("input", { type: "hidden", id: inputId });
      hidden.value = block[key] || "";
      const editor = el("trix-editor", { input: inputId, class: "obe-trix trix-content", placeholder: opts.defaultHtml ? "Leave empty to use the default text" : "" });
      editor.addEventListener("trix-change", () => set(hidden.value));
      editor.addEventListener("trix-file-accept", (e) => e.preventDefault()); // images go in image blocks
      const picker = this.variablePicker((text) => { editor.editor.insertString(text); });
      const box = el("div", { class: "obe-field" }, el("span", { class: "obe-label", text: label }), hidden, editor, el("span", { class: "obe-row" }, picker));
      if (opts.defaultHtml) box.append(el("span", { class: "obe-help", text: "Default text: " + stripHtml(opts.defaultHtml).slice(0, 160) }));
      return box;
    }
    imageField(block, set) {
      const preview = block.src ? el("img", { src: block.src, alt: "", class: "obe-thumb" }) : el("span", { class: "obe-muted", text: "No image chosen" });
      const choose = el("button", { type: "button", class: "obe-btn", onclick: () => this.pickImage((img) => {
        block.imageId = img.id; block.src = img.url; block.width = img.width; block.height = img.height;
        if (!block.alt) block.alt = img.name.replace(/\.[a-z]+$/i, "");
        this.build();
      }), text: block.src ? "Change image…" : "Choose from the library…" });
      return el("div", { class: "obe-field" }, el("span", { class: "obe-label", text: "Image" }), el("span", { class: "obe-row" }, preview, choose));
    }
    socialField(block, set) {
      const box = el("div", { class: "obe-social" });
      block.links.forEach((link, i) => box.append(el("span", { class: "obe-row" },
        el("select", { class: "obe-input", "aria-label": "Network", onchange: (e) => { link.network = e.target.value; this.changed(); } }, NETWORKS.map((n) => el("option", { value: n, selected: n === link.network, text: n }))),
        el("input", { type: "url", class: "obe-input", value: link.url, placeholder: "https://", oninput: (e) => { link.url = e.target.value; this.changed(); } }),
        icon("Remove this link", "close", block.links.length === 1, () => { block.links.splice(i, 1); this.build(); }, "obe-danger"))));
      box.append(el("button", { type: "button", class: "obe-btn", disabled: block.links.length >= 12, onclick: () => { block.links.push({ network: "web", url: "https://" }); this.build(); }, text: "+ Add a link" }));
      return this.wrap("Links", box);
    }

    // --- image picker -----------------------------------------------------------------------------
    pickImage(done) {
      const dialog = el("dialog", { class: "obe-dialog" });
      const grid = el("div", { class: "obe-grid" }, el("span", { class: "obe-muted", text: "Loading…" }));
      const error = el("p", { class: "obe-error", role: "alert" });
      const file = el("input", { type: "file", accept: "image/jpeg,image/png,image/gif,image/webp", class: "obe-file", "aria-label": "Upload an image" });
      const close = () => { dialog.close(); dialog.remove(); };
      const choose = (img) => { close(); done(img); };
      const show = (images) => {
        grid.replaceChildren();
        if (!images.length) grid.append(el("span", { class: "obe-muted", text: "No images yet: upload one." }));
        images.forEach((img) => grid.append(el("button", { type: "button", class: "obe-pick", "data-image": img.id, onclick: () => choose(img) },
          el("img", { src: img.url, alt: "" }), el("span", { text: img.name + " · " + img.width + "×" + img.height }))));
      };
      file.addEventListener("change", () => {
        if (!file.files.length) return;
        const body = new FormData();
        body.append("file", file.files[0]);
        error.textContent = "Uploading…";
        fetch(this.config.uploadUrl, { method: "POST", body: body, credentials: "same-origin", headers: { "X-CSRFToken": csrfToken() } })
          .then((r) => r.json().then((data) => ({ ok: r.ok, data: data })))
          .then(({ ok, data }) => { if (!ok) { error.textContent = data.error || "Upload failed"; return; } choose(data.image); })
          .catch(() => { error.textContent = "Upload failed: check the connection and try again."; });
      });
      dialog.append(el("h3", { text: "Image library" }), el("label", { class: "obe-field" }, el("span", { class: "obe-label", text: "Upload a new image (JPEG, PNG, GIF, WebP; up to 5 MB)" }), file), error, grid,
        el("div", { class: "obe-row" }, el("button", { type: "button", class: "obe-btn", onclick: close, text: "Cancel" })));
      document.body.append(dialog);
      dialog.showModal();
      fetch(this.config.libraryUrl, { credentials: "same-origin" }).then((r) => r.json()).then((data) => show(data.images || [])).catch(() => { grid.textContent = "The library could not be loaded."; });
    }

    // --- live preview -------------------------------------------------------------------------------
    preview() {
      const frame = this.root.querySelector(".obe-frame");
      if (!frame || !this.doc) return;
      const form = el("form", { method: "post", action: this.config.previewUrl, target: frame.name, class: "obe-hidden" },
        el("input", { type: "hidden", name: "csrfmiddlewaretoken", value: csrfToken() }),
        el("input", { type: "hidden", name: "content", value: JSON.stringify(this.doc) }),
        el("input", { type: "hidden", name: "translations", value: JSON.stringify(this.texts) }),
        el("input", { type: "hidden", name: "language", value: this.language }));
      document.body.append(form);
      form.submit();
      form.remove();
    }
  }

  function icon(label, glyph, disabled, onclick, extra) {
    return el("button", { type: "button", class: "obe-icon" + (extra ? " " + extra : ""), title: label, "aria-label": label, disabled: disabled, onclick: onclick },
      el("span", { class: "material-symbols-outlined", "aria-hidden": "true", text: glyph }));
  }
  function stripHtml(html) { const d = document.createElement("div"); d.innerHTML = html; return d.textContent; }
  function insertAt(input, text) {
    const start = input.selectionStart ?? input.value.length, end = input.selectionEnd ?? input.value.length;
    input.value = input.value.slice(0, start) + text + input.value.slice(end);
    input.focus();
  }
  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) return input.value;
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function start() {
    document.querySelectorAll(".owlat-block-editor").forEach((root) => { if (!root._editor) root._editor = new Editor(root); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
