"""Admin forms that replace typed JSON (style "operators never type JSON").

* `owlat.forms.nested`: a form field whose widget renders one or more sub-forms (chosen by a select) and whose
  value the parent form cleans into the JSON the model stores; the `styled` helper gives sub-form widgets the
  admin theme's look.
* `owlat.forms.conditions`: the condition builder of the AUT-34 condition language — one condition (automation
  condition steps) or a filter set (segments, DOM-09).
* `owlat.forms.segments`: the segment form with the builder and its live count.
"""
