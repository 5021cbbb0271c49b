"""Sign-up forms (the hosted subscribe page, the embeddable form and its JSON variant): bot defences in
`guards`, the subscribe and confirm flow in `services`, the public pages in `views`, the embed snippet in `embed`,
the operator's numbers in `stats`.

Settings (each with a default; 0 lifts a rate limit):

| setting | default | what |
| --- | --- | --- |
| `SIGNUP_MIN_FILL_SECONDS` | 3 | a form sent sooner after it was shown is a bot's |
| `SIGNUP_MAX_FORM_AGE_SECONDS` | 86400 | an older page is shown again with a fresh timestamp |
| `SIGNUP_IP_RATE_PER_MINUTE` / `SIGNUP_IP_BURST` | 6 / 10 | sign-ups per client address |
| `SIGNUP_FORM_RATE_PER_MINUTE` / `SIGNUP_FORM_BURST` | 120 / 300 | sign-ups per form |
| `SIGNUP_MAX_BODY_BYTES` | 16384 | the largest post |
| `SIGNUP_FIELD_MAX_CHARS` | 200 | the longest value of a field (the email address: 254) |
| `SIGNUP_RESEND_SECONDS` | 3600 | at most one confirmation mail per address in this time |
| `SIGNUP_CONFIRM_MAX_AGE_DAYS` | 7 | how long a confirmation link works (DOM-08); unconfirmed sign-ups are deleted after it (`retention`) |
"""
