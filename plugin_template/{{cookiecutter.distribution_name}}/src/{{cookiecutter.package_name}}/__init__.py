{%- set name = cookiecutter.plugin_name -%}
{{ ('"""' ~ name ~ ": " ~ cookiecutter.description.rstrip(".") ~ '."""') | wordwrap(100, break_long_words=False) }}

from {{ cookiecutter.package_name }}.plugin import (
    {{ name }},
{%- if cookiecutter.with_args %}
    {{ name }}Args,
{%- endif %}
)

__all__ = [
    "{{ name }}",
{%- if cookiecutter.with_args %}
    "{{ name }}Args",
{%- endif %}
]
