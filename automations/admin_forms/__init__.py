"""Forms of the automation editor: one form per trigger type and per step type, chosen by the type
select and cleaned into exactly the JSON `Automation.trigger_config` / `AutomationStep.config` store (AUT-15,
AUT-31 … AUT-34). `editor` holds the admin's model forms that carry them; `views` the template autocomplete.
"""
