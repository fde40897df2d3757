//! What a commit does to a table's structure: schemas, partition specs and sort orders
//! added (an equal one reused by id, new ids above every earlier one) and bound to the
//! current schema.

use super::{MetadataBuilder, UpdateError};
use crate::iceberg::metadata::{PARTITION_DATA_ID_START, PartitionSpec, Schema, SortOrder};

impl MetadataBuilder {
    pub(super) fn add_schema(&mut self, schema: &Schema) -> Result<(), UpdateError> {
        schema.check().map_err(UpdateError::Invalid)?;
        schema
            .check_for_format(self.meta.format_version)
            .map_err(UpdateError::Invalid)?;
        self.structure_changed = true;
        let meta = &mut self.meta;
        let id = Schema::add_or_reuse(&mut meta.schemas, schema);
        meta.last_column_id = meta.last_column_id.max(schema.highest_field_id());
        self.last_added_schema = Some(id);
        Ok(())
    }

    /// The schema new specs and orders bind to: the current one, as in the reference
    /// implementation.
    fn binding_schema(&self, what: &str) -> Result<&Schema, UpdateError> {
        self.meta.current_schema().ok_or_else(|| {
            UpdateError::Invalid(format!(
                "cannot add a {what} before the table has a current schema"
            ))
        })
    }

    pub(super) fn add_spec(&mut self, spec: &PartitionSpec) -> Result<(), UpdateError> {
        let mut spec = spec.clone();
        let format_version = self.meta.format_version;
        spec.bind(self.binding_schema("partition spec")?, format_version)
            .map_err(UpdateError::Invalid)?;
        self.structure_changed = true;
        let meta = &mut self.meta;
        // An equal spec is reused as it is: no new spec, no field ids spent.
        if let Some(existing) = meta.partition_specs.iter().find(|s| s.same_fields(&spec)) {
            self.last_added_spec = Some(existing.spec_id);
            return Ok(());
        }
        // Fields without an id get fresh ones above everything assigned so far; version 1
        // numbers every spec's fields from the start, as its readers expect.
        let mut next = if format_version == 1 {
            PARTITION_DATA_ID_START - 1
        } else {
            meta.last_partition_id.max(PARTITION_DATA_ID_START - 1)
        };
        for field in &mut spec.fields {
            if field.field_id.is_none() {
                next += 1;
                field.field_id = Some(next);
            }
        }
        let id = meta
            .partition_specs
            .iter()
            .map(|s| s.spec_id + 1)
            .max()
            .unwrap_or(0);
        spec.spec_id = id;
        if let Some(highest) = spec.highest_field_id() {
            meta.last_partition_id = meta.last_partition_id.max(highest);
        }
        meta.partition_specs.push(spec);
        self.last_added_spec = Some(id);
        Ok(())
    }

    pub(super) fn add_sort_order(&mut self, order: &SortOrder) -> Result<(), UpdateError> {
        let mut order = order.clone();
        order
            .bind(self.binding_schema("sort order")?)
            .map_err(UpdateError::Invalid)?;
        self.structure_changed = true;
        let meta = &mut self.meta;
        let id = if order.is_unsorted() {
            // The unsorted order is always id 0.
            if meta.sort_order(0).is_none() {
                meta.sort_orders.push(SortOrder::unsorted());
            }
            0
        } else {
            match meta.sort_orders.iter().find(|o| o.fields == order.fields) {
                Some(existing) => existing.order_id,
                None => {
                    let id = meta
                        .sort_orders
                        .iter()
                        .map(|o| o.order_id + 1)
                        .max()
                        .unwrap_or(1)
                        .max(1);
                    meta.sort_orders.push(SortOrder {
                        order_id: id,
                        fields: order.fields,
                    });
                    id
                }
            }
        };
        self.last_added_order = Some(id);
        Ok(())
    }
}
