/* Sub-forms chosen by a select, the condition builder and the segment's live count (owlat/forms). No build step. */
"use strict";
(function () {
  if (window.owlatBuilderLoaded) return; // the admin may include a form's media more than once
  window.owlatBuilderLoaded = true;
  function findSwitch(el, name) {
    // The nearest select named `name` (or `<prefix>-name` inside an inline row) above the nested widget.
    for (let node = el.parentElement; node; node = node.parentElement) {
      const select = node.querySelector('select[name="' + name + '"], select[name$="-' + name + '"]');
      if (select) return select;
      if (node.tagName === "FORM") break;
    }
    return null;
  }

  function showChosen(nested) {
    if (!nested.dataset.switch) return; // a single sub-form, always shown
    const select = findSwitch(nested, nested.dataset.switch);
    const value = select ? select.value : "";
    nested.querySelectorAll(":scope > .owlat-subform").forEach((sub) => {
      sub.hidden = sub.dataset.key !== value;
    });
  }

  function refreshCondition(root) {
    const kind = root.querySelector('select[name$="-kind"]');
    if (!kind) return;
    root.querySelectorAll("[data-kinds]").forEach((input) => {
      const wrap = input.closest(".owlat-field");
      if (wrap) wrap.hidden = input.dataset.kinds !== kind.value;
    });
    const op = root.querySelector("[data-operator]");
    const value = root.querySelector("[data-value]");
    if (op && value && kind.value === "contact_property") {
      const noValue = ["is_empty", "not_empty", "is_true", "is_false"].includes(op.value);
      value.closest(".owlat-field").hidden = noValue;
    }
  }

  function refreshPreview(picker) {
    const link = picker.closest(".owlat-subform").querySelector("a.owlat-preview");
    if (!link) return;
    if (picker.value) {
      link.href = link.dataset.urlTemplate.replace(link.dataset.placeholder, picker.value);
      link.hidden = false;
    } else {
      link.hidden = true;
    }
  }

  function refreshAll(scope) {
    scope.querySelectorAll(".owlat-nested").forEach(showChosen);
    scope.querySelectorAll(".owlat-subform, .owlat-condition-row").forEach(refreshCondition);
  }

  let countTimer = null;
  function scheduleCount(form) {
    const box = form.querySelector(".owlat-live-count[data-url]");
    if (!box) return;
    clearTimeout(countTimer);
    countTimer = setTimeout(() => {
      const data = new FormData(form);
      fetch(box.dataset.url, { method: "POST", body: data, credentials: "same-origin" })
        .then((r) => r.json())
        .then((body) => {
          box.classList.toggle("owlat-error", !!body.errors);
          box.textContent = body.errors ? body.errors.join(" ") : body.label;
        })
        .catch(() => {});
    }, 350);
  }

  document.addEventListener("change", (event) => {
    const form = event.target.closest("form");
    if (!form) return;
    refreshAll(form);
    if (event.target.classList.contains("owlat-template-picker")) refreshPreview(event.target);
    scheduleCount(form);
  });
  document.addEventListener("input", (event) => {
    const form = event.target.closest("form");
    if (form && event.target.closest(".owlat-filters")) scheduleCount(form);
  });
  document.addEventListener("click", (event) => {
    const button = event.target.closest(".owlat-add-condition");
    if (!button) return;
    const filters = button.closest(".owlat-filters");
    const prefix = filters.dataset.prefix;
    const total = filters.querySelector('input[name="' + prefix + '-TOTAL_FORMS"]');
    const html = filters.querySelector("template.owlat-condition-template").innerHTML;
    const holder = document.createElement("div");
    holder.innerHTML = html.replace(/__prefix__/g, total.value);
    const row = holder.firstElementChild;
    filters.querySelector(".owlat-conditions").appendChild(row);
    total.value = String(Number(total.value) + 1);
    refreshCondition(row);
  });
  // Template pickers are select2 widgets: their change events come through jQuery.
  function bindSelect2() {
    if (window.django && window.django.jQuery) {
      window.django.jQuery(document).on("select2:select select2:clear", ".owlat-template-picker", function () {
        refreshPreview(this);
      });
    }
  }
  document.addEventListener("formset:added", (event) => refreshAll(event.target));
  document.addEventListener("DOMContentLoaded", () => {
    refreshAll(document);
    bindSelect2();
    document.querySelectorAll(".owlat-live-count[data-url]").forEach((box) => scheduleCount(box.closest("form")));
  });
})();
