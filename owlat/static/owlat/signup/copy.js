// The sign-up form admin's "Copy snippet" button: copies the embed snippet's textarea to the clipboard.
document.addEventListener("click", function (event) {
  var button = event.target.closest("button.signup-copy");
  if (!button) return;
  var source = document.getElementById(button.dataset.copy);
  if (!source) return;
  var done = function () { button.textContent = "Copied"; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(source.value).then(done);
  } else {
    source.select();
    document.execCommand("copy");
    done();
  }
});
