"""Import a CSV with one bad row in the browser: see its first rows and the column mapping, import, and read the
error (the good rows are imported)."""

from __future__ import annotations

import pytest

from tests.browser.conftest import login, screenshot

pytestmark = pytest.mark.django_db(transaction=True)


def test_import_a_csv_with_one_bad_row_and_read_the_error(page, live_server, operator, tmp_path):
    from owlat.models import Contact

    csv_file = tmp_path / "contacts.csv"
    csv_file.write_text(
        "email,first_name,last_name\nada@example.com,Ada,Lovelace\nnot-an-address,Bad,Row\ngrace@example.com,Grace,Hopper\n"
    )
    login(page, live_server)
    page.goto(f"{live_server.url}/admin/owlat/contact/")
    page.click("text=Import CSV")
    page.set_input_files("#id_file", str(csv_file))
    page.click(".owlat-submit")
    page.wait_for_load_state()
    # the mapping step: the first rows under each column, what each column is read as
    preview = page.get_by_test_id("import-preview")
    assert "not-an-address" in preview.inner_text()
    assert preview.locator("tbody tr").first.locator("td").all_inner_texts() == [
        "ada@example.com",
        "Ada",
        "Lovelace",
    ]
    assert page.locator("select[name=column_0]").input_value() == "email"
    assert page.locator("select[name=column_2]").input_value() == "last_name"
    assert not Contact.objects.filter(organization=operator["org"]).exists()
    screenshot(page, "10-import-csv-mapping")
    page.click(".owlat-submit")
    page.wait_for_load_state()
    errors = page.locator(".owlat-import-errors li")
    assert errors.count() == 1
    assert errors.first.inner_text() == "Line 3: Invalid email format: not-an-address"
    assert "2 created" in page.inner_text(".owlat-import-summary")
    assert set(Contact.objects.filter(organization=operator["org"]).values_list("email", flat=True)) == {
        "ada@example.com",
        "grace@example.com",
    }
    screenshot(page, "10-import-csv-error")
